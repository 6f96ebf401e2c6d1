//! The fused op's attributes → plan → kernel specialisation: any attribute
//! bytes and operand shape either are refused or give a plan whose WGSL
//! naga validates and whose CUDA source is produced (CUDA's multi-pass
//! plans in both forms: radix-2 stages, four-step). Nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::analysis::Target;
use rlx_opt::analysis::plan::{DeviceLimits, plan};
use rlx_opt::fused::WelchPeaksAttrs;
use rlx_opt::ir::{DType, TensorType};
use rlx_opt::lower::{cuda, specialize, wgsl};

fuzz_target!(|input: (Vec<u8>, Vec<u32>)| {
    let (bytes, dims) = input;
    let Ok(attrs) = WelchPeaksAttrs::from_bytes(&bytes) else { return };
    let dims: Vec<u64> = dims.iter().take(4).map(|d| u64::from(*d)).collect();
    let input = TensorType::new(&dims, DType::F32);
    // CUDA with every plan form off (radix-2 stages, a one-segment entry
    // paired) and on (four-step, packed), whatever the defaults.
    let cuda = DeviceLimits::assumed(Target::Cuda);
    let (first, every) = (cuda.with_opt_ins(|_| Some(false)), cuda.with_opt_ins(|_| Some(true)));
    for (target, limits) in [(Target::Wgpu, DeviceLimits::assumed(Target::Wgpu)), (Target::Cuda, first), (Target::Cuda, every)] {
        let Ok(planned) = plan(&attrs, &input, target, &limits) else { continue };
        let Some(kernel) = planned.kernel else { continue };
        let spec = specialize(&attrs, kernel);
        match target {
            Target::Wgpu => {
                wgsl::compile(&spec).unwrap_or_else(|e| panic!("a planned kernel does not validate: {e}"));
            }
            _ => {
                cuda::source(&spec).unwrap_or_else(|e| panic!("a planned kernel has no CUDA source: {e}"));
            }
        }
    }
});
