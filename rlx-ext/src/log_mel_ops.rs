//! Every fused log-mel op the pass lowered to a GPU kernel RLX can launch,
//! fitted to RLX's backend, which launches one kernel per op: the op becomes
//! two ops, each with its kernel registered under a name of its own (RLX
//! caches compiled kernels by op name):
//! - `rlx_opt.log_mel.<target>.<key>.bands` (the filters → each filter's
//!   band, `[n_mels, 2]`: once per run, not per frame);
//! - `rlx_opt.log_mel.<target>.<key>` (the frames, the filters, the bands and
//!   the window when the op has one → the mel values), in the fused op's place.
//!
//! On wgpu these are the WGSL kernels; on CUDA (with the `cuda` feature) the
//! CUDA kernels in RLX's signature, which ran in RLX on an H200 and matched
//! RLX on the CPU ([`cuda_log_mel_kernels`]; `RLX_EXT_CUDA_LOG_MEL=0` keeps
//! RLX's CUDA sessions on the CPU kernel through the host). Both ops also have CPU kernels, for a device
//! that runs them through the host (RLX's straddle guard). An op no kernel
//! takes in RLX's arena keeps the fused op's name and runs its CPU kernel,
//! staged through the host.

use crate::error::ExtError;
use crate::kernels::{CudaKernel, WgpuKernel, install_cuda, install_wgpu};
use crate::log_mel::{install_bands_cpu, install_specialized_cpu};
use crate::fitting::{key, rlx_limits};
use rlx_opt::analysis::Target;
use rlx_opt::fused::{LOG_MEL, LogMelAttrs, Lowering};
use rlx_opt::ir::{DType, Graph, NodeId, Op, OpKind, TensorType};
use rlx_opt::lower::Bindings;
use rlx_opt::lower::log_mel::{LogMelEntry, LogMelSpec, cuda_source_with, launches, rlx_entry, specialize as specialize_kernel, wgsl_source_with};

/// The suffix of the op that finds the bands.
pub const BANDS_SUFFIX: &str = "bands";

/// The environment variable that switches RLX's CUDA sessions between the
/// log-mel op's CUDA kernels (the default, `1`) and its CPU kernel through
/// the host (`0`).
pub const CUDA_LOG_MEL_VAR: &str = "RLX_EXT_CUDA_LOG_MEL";

/// Whether RLX's CUDA sessions run the log-mel op on its CUDA kernels: with
/// the `cuda` feature, unless [`CUDA_LOG_MEL_VAR`] is `0`. The host call was
/// the default until these kernels ran in RLX's signature on a GPU (an
/// H200: `log_mel_cuda_session.rs`, every chain and fixture within 1e-4 of
/// RLX on the CPU).
pub fn cuda_log_mel_kernels() -> bool {
    cfg!(feature = "cuda") && rlx_opt::opt_in::switch(CUDA_LOG_MEL_VAR, true)
}

/// Whether this build registers log-mel kernels with RLX for `target`.
pub fn has_log_mel_kernels(target: Target) -> bool {
    match target {
        Target::Cpu | Target::Wgpu => true,
        Target::Cuda => cuda_log_mel_kernels(),
        Target::Rocm | Target::Metal | Target::Mlx | Target::Tpu => false,
    }
}

/// Fit every log-mel op of `graph` lowered to `target`'s GPU kernel to
/// RLX's kernels, where this build registers them. Returns how many ops now
/// run on a GPU kernel.
pub fn specialize_log_mel(graph: &mut Graph, target: Target) -> Result<usize, ExtError> {
    let lowering = match target {
        Target::Wgpu => Lowering::Spirv,
        Target::Cuda if cuda_log_mel_kernels() => Lowering::Cuda,
        _ => return Ok(0),
    };
    let fused: Vec<(NodeId, LogMelAttrs)> = graph
        .ids()
        .filter_map(|id| match graph.node(id).op.log_mel() {
            Some(Ok(attrs)) if attrs.lowering == Some(lowering) => Some((id, attrs.clone())),
            _ => None,
        })
        .collect();
    let mut on_gpu = 0;
    for (id, attrs) in fused {
        let node = graph.node(id);
        let operands: Vec<NodeId> = node.operands.iter().copied().collect();
        let Some(spec) = gpu_spec(&attrs, &graph.node(operands[0]).ty, target) else { continue };
        let OpKind::Custom { attrs: attr_bytes, .. } = node.op.kind() else {
            return Err(ExtError::Rlx(format!("fused op %{}: not a custom op", node.label)));
        };
        let attr_bytes = attr_bytes.clone();
        let base = format!("{LOG_MEL}.{}.{:016x}", target.name(), key(target, &node.op.text(), &graph.node(operands[0]).ty));
        let bands_name = format!("{base}.{BANDS_SUFFIX}");
        register(target, &spec, &bands_name, &base)?;
        install_bands_cpu(&bands_name);
        install_specialized_cpu(&base);
        let custom = |name: String, num_inputs: u32| Op::from_kind(OpKind::Custom { name, num_inputs, attrs: attr_bytes.clone() });
        // The frames, the filters, the bands, then the window (operand 2 of the fused op).
        let bands = graph.add_node(custom(bands_name, 1), &[operands[1]], TensorType::new(&[spec.mels, 2], DType::F32));
        let mut new_operands = vec![operands[0], operands[1], bands];
        new_operands.extend(operands.get(2));
        let node = graph.node_mut(id);
        node.op = custom(base, new_operands.len() as u32);
        node.operands = new_operands.into_iter().collect();
        on_gpu += 1;
    }
    Ok(on_gpu)
}

/// The op's kernel plan on RLX's `target` device, if RLX can launch it:
/// on wgpu its operands, the bands and its result must fit the one binding
/// RLX's backend makes over an op's operands and result; rlx-cuda passes
/// arena offsets as 32-bit element counts, so on CUDA they must stay below
/// 2³² values in all.
fn gpu_spec(attrs: &LogMelAttrs, input: &TensorType, target: Target) -> Option<LogMelSpec> {
    let limits = rlx_limits(target);
    let shape: Vec<usize> = input.static_dims()?.iter().map(|d| usize::try_from(*d).ok()).collect::<Option<_>>()?;
    let spec = specialize_kernel(attrs, &shape, target, &limits).ok()?;
    let values = spec.input_len + spec.filters_len + 2 * spec.mels + if attrs.window { spec.window_len } else { 0 } + spec.output_len;
    let fits = match target {
        Target::Cuda => values <= u32::MAX as u64,
        _ => 4 * values <= limits.max_binding_bytes,
    };
    fits.then_some(spec)
}

/// Register the kernels of both ops: the bands under `bands_name`, the
/// frames under `name`.
fn register(target: Target, spec: &LogMelSpec, bands_name: &str, name: &str) -> Result<(), ExtError> {
    let bindings = Bindings::RlxArena { stage: 0 };
    let source = match target {
        Target::Cuda => cuda_source_with(spec, bindings)?,
        _ => wgsl_source_with(spec, bindings)?,
    };
    for launch in launches(spec) {
        let name = if launch.entry == LogMelEntry::MelBands { bands_name } else { name }.to_string();
        match target {
            Target::Cuda => {
                // RLX launches a 1-D grid.
                let blocks = u32::try_from(launch.groups).map_err(|_| ExtError::Rlx(format!("{name}: {} blocks exceed a 1-D CUDA grid", launch.groups)))?;
                install_cuda(CudaKernel { name, source: source.clone(), entry: rlx_entry(launch.entry), threads: launch.threads, blocks, stage: 0 });
            }
            _ => {
                let (x, y) = launch.grid();
                install_wgpu(WgpuKernel { name, wgsl: source.clone(), entry: launch.entry.name(), workgroups: (x, y, 1) });
            }
        }
    }
    Ok(())
}
