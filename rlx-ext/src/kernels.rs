//! The fused op registered with RLX through its extension points: the op
//! extension (shape inference, verification; no `lower` rule, which would
//! pre-empt the kernels), the CPU kernel under every name the op takes, and
//! GPU kernels for ops [`super::specialize`] fitted to a plan: rlx-wgpu's
//! `WgpuGpuKernel` and, with the `cuda` feature, rlx-cuda's
//! `CudaGpuKernel`. RLX caches compiled GPU kernels by op name, so every
//! specialisation is registered under a name of its own.

use rlx_opt::fused::{WELCH_PEAKS, WelchPeaksAttrs};
use rlx_opt::lower::KernelBuffer;
use crate::caller_share::share_rows_with_caller;
use rlx_opt::runtime::TensorRef;
use rlx_opt::runtime::welch::passes::{CpuPass, PassInput, run_pass};
use rlx_opt::runtime::welch::{Geometry, cpu_kernel_into, cpu_kernel_rows, geometry};
use crate::recording::{count_native_gpu_use, record_kernel};
use rlx_cpu::op_registry::{CpuTensorMut, CpuTensorRef, register_cpu_kernel};
use rlx_ir::op_registry::register_op;
use rlx_ir::{DType, Shape};
use crate::registration::{FusedOpExtension, FusedOpSignature, once_per_name, static_dims};
use std::sync::Arc;

/// The op extension and CPU kernel of `rlx_opt.welch_peaks`. Idempotent.
pub fn install_kernels() {
    install_op(WELCH_PEAKS);
}

/// The op extension and CPU kernel under `name` (the fused op's own name,
/// or a specialisation's, whose attributes are the fused op's).
pub fn install_op(name: &str) {
    once_per_name(&format!("op:{name}"), || {
        register_op(Arc::new(FusedOpExtension::<WelchPeaksOp>::new(name)));
        register_cpu_kernel(Arc::new(WelchPeaksCpu { name: name.to_string() }));
    });
}

/// The Welch-peaks op as RLX's registry sees it.
struct WelchPeaksOp;

impl FusedOpSignature for WelchPeaksOp {
    const OPERAND_0: &'static str = "the segments";
    /// The segments; the window a second operand when the attributes say so.
    const MIN_INPUTS: usize = 1;

    /// The result shape of the op with `attrs` (JSON bytes) on an operand of `input`.
    fn result_shape(attrs: &[u8], input: &Shape) -> Result<Shape, String> {
        let attrs = WelchPeaksAttrs::from_bytes(attrs).map_err(|e| e.to_string())?;
        let mut dims = attrs.batch_shape(&static_dims(input)?).map_err(|e| e.to_string())?;
        dims.push(2 * attrs.k as usize);
        Ok(Shape::new(&dims, DType::F32))
    }

    fn operands(attrs: &[u8]) -> Option<usize> {
        WelchPeaksAttrs::from_bytes(attrs).ok().map(|a| a.num_inputs() as usize)
    }
}

/// The fused op's operands in RLX's tensors, seen as rlx-opt's views: the
/// segments and, when the op takes one, the window.
struct Operands<'a> {
    input_shape: Vec<usize>,
    input: &'a [f32],
    window: Option<(Vec<usize>, &'a [f32])>,
}

impl<'a> Operands<'a> {
    fn read(inputs: &'a [CpuTensorRef<'_>]) -> Result<Self, String> {
        let segs = inputs.first().ok_or("the fused op needs its segments")?;
        let window = match inputs.get(1) {
            Some(w) => Some((static_dims(w.shape())?, w.expect_f32("the window")?)),
            None => None,
        };
        Ok(Operands { input_shape: static_dims(segs.shape())?, input: segs.expect_f32("the segments")?, window })
    }

    fn input(&self) -> TensorRef<'_> {
        TensorRef { shape: &self.input_shape, data: self.input }
    }

    fn window(&self) -> Option<TensorRef<'_>> {
        self.window.as_ref().map(|(shape, data)| TensorRef { shape, data })
    }
}

/// The native CPU kernel (`runtime::welch::cpu_kernel_into`) straight on
/// RLX's tensors: no copy in or out.
struct WelchPeaksCpu {
    name: String,
}

impl rlx_cpu::op_registry::CpuKernel for WelchPeaksCpu {
    fn name(&self) -> &str {
        &self.name
    }

    fn execute(&self, inputs: &[CpuTensorRef<'_>], output: CpuTensorMut<'_>, attrs: &[u8]) -> Result<(), String> {
        let started = std::time::Instant::now();
        let attrs = WelchPeaksAttrs::from_bytes(attrs).map_err(|e| e.to_string())?;
        let operands = Operands::read(inputs)?;
        let (input, window) = (operands.input(), operands.window());
        let g = geometry(&attrs, input, window).map_err(|e| e.to_string())?;
        let out = output.expect_f32_mut("the result")?;
        let want = g.batch * 2 * attrs.k as usize;
        if out.len() != want {
            return Err(format!("the result holds {} values, the op writes {want}", out.len()));
        }
        run_sharing_the_caller(&attrs, &g, input, window, out);
        record_kernel(&self.name, started);
        Ok(())
    }
}

/// The CPU kernel as RLX calls it ([`share_rows_with_caller`]). The split
/// plan spreads one entry over the pool: nothing to share.
fn run_sharing_the_caller(attrs: &WelchPeaksAttrs, g: &Geometry, input: TensorRef<'_>, window: Option<TensorRef<'_>>, out: &mut [f32]) {
    if attrs.plan == Some(rlx_opt::fused::PlanName::Split) {
        return cpu_kernel_into(attrs, g, input, window, out);
    }
    share_rows_with_caller(out, 2 * attrs.k as usize, 1, |first, out, parallel| cpu_kernel_rows(attrs, g, input, window, first, out, parallel));
}

/// Register the CPU kernel of one op of a plan split into ops (one per
/// launch, [`super::specialize`]) under `name`: the launch's CPU pass
/// ([`CpuPass`]), for a CPU session or a GPU backend with no kernel under
/// the op's name (it stages such ops through the host).
pub fn install_cpu_step(name: &str, pass: CpuPass) {
    once_per_name(&format!("cpu-step:{name}"), || register_cpu_kernel(Arc::new(WelchStepCpu { name: name.to_string(), pass })));
}

struct WelchStepCpu {
    name: String,
    pass: CpuPass,
}

impl rlx_cpu::op_registry::CpuKernel for WelchStepCpu {
    fn name(&self) -> &str {
        &self.name
    }

    fn execute(&self, inputs: &[CpuTensorRef<'_>], output: CpuTensorMut<'_>, attrs: &[u8]) -> Result<(), String> {
        let started = std::time::Instant::now();
        let attrs = WelchPeaksAttrs::from_bytes(attrs).map_err(|e| e.to_string())?;
        let first = inputs.first().ok_or_else(|| format!("{} needs an operand", self.name))?;
        let out = output.expect_f32_mut("the result")?;
        match self.pass.reads_operands() {
            true => {
                let operands = Operands::read(inputs)?;
                let from = PassInput::Operands { input: operands.input(), window: operands.window() };
                run_pass(&attrs, self.pass, from, out)
            }
            false => {
                let what = if self.pass.entry.buffers().first() == Some(&KernelBuffer::Partials) { "the partial spectra" } else { "the spectra" };
                run_pass(&attrs, self.pass, PassInput::Buffer(first.expect_f32(what)?), out)
            }
        }
        .map_err(|e| e.to_string())?;
        record_kernel(&self.name, started);
        Ok(())
    }
}

/// A WGSL kernel of a plan in RLX's arena convention: one dispatch, its
/// grid fixed by the plan (not by the output's length).
#[derive(Debug)]
pub struct WgpuKernel {
    pub name: String,
    pub wgsl: String,
    pub entry: &'static str,
    pub workgroups: (u32, u32, u32),
}

impl rlx_wgpu::wgpu_gpu_custom::WgpuGpuKernel for WgpuKernel {
    fn name(&self) -> &str {
        &self.name
    }

    fn wgsl(&self) -> &str {
        &self.wgsl
    }

    fn entry_point(&self) -> &str {
        self.entry
    }

    /// Asked once per op a `Session` compiles to this dispatch: counted as
    /// a native use ([`crate::Recording::native_gpu_uses`]).
    fn workgroups(&self, _out_elems: u32) -> (u32, u32, u32) {
        count_native_gpu_use();
        self.workgroups
    }
}

/// Register a WGSL kernel (and its op, with the CPU kernel for other devices).
pub fn install_wgpu(kernel: WgpuKernel) {
    let name = kernel.name.clone();
    once_per_name(&format!("wgpu:{name}"), || rlx_wgpu::wgpu_gpu_custom::register_wgpu_gpu_kernel(Arc::new(kernel)));
}

/// A CUDA kernel of a plan in RLX's signature: one launch of `blocks`
/// blocks of `threads`; `stage` goes to the kernel as extra e0.
#[derive(Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))] // read by RLX's CUDA backend only
pub struct CudaKernel {
    pub name: String,
    pub source: String,
    pub entry: String,
    pub threads: u32,
    pub blocks: u32,
    pub stage: u32,
}

#[cfg(feature = "cuda")]
impl rlx_cuda::cuda_gpu_kernels::CudaGpuKernel for CudaKernel {
    fn name(&self) -> &str {
        &self.name
    }

    fn cuda_c(&self) -> &str {
        &self.source
    }

    fn entry_point(&self) -> &str {
        &self.entry
    }

    fn block_size(&self) -> u32 {
        self.threads
    }

    /// Asked at each launch: counted as a native use
    /// ([`crate::Recording::native_gpu_uses`]).
    fn extras(&self, _attrs: &[u8], _out_shape: &Shape) -> [u32; 4] {
        count_native_gpu_use();
        [self.stage, 0, 0, 0]
    }

    fn grid_blocks(&self, _launch_elems: u32, _block_size: u32) -> u32 {
        self.blocks
    }
}

/// Register a CUDA kernel; without the `cuda` feature there is no RLX
/// CUDA backend to register with, and [`super::specialize`] never asks.
pub fn install_cuda(kernel: CudaKernel) {
    #[cfg(feature = "cuda")]
    {
        let name = kernel.name.clone();
        once_per_name(&format!("cuda:{name}"), || rlx_cuda::cuda_gpu_kernels::register_cuda_gpu_kernel(Arc::new(kernel)));
    }
    #[cfg(not(feature = "cuda"))]
    let _ = kernel;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::op_registry::OpExtension;
    use rlx_ir::{Graph, Op};

    /// The Welch-peaks op through the shared extension: rows of 8 segments
    /// give `[batch, 2k]`, a window is a second operand.
    #[test]
    fn the_registry_infers_and_verifies_the_op() {
        let extension = FusedOpExtension::<WelchPeaksOp>::new(WELCH_PEAKS);
        let f32s = |dims: &[usize]| Shape::new(dims, DType::F32);
        let segments = f32s(&[3 * 8, 256]);
        let plain = WelchPeaksAttrs::rlx(256, 8, 16);
        let windowed = WelchPeaksAttrs { window: true, ..plain.clone() }.to_bytes();
        assert_eq!(extension.num_inputs(), 1);
        assert_eq!(extension.infer_shape(&[&segments], &plain.to_bytes()).dims(), f32s(&[3, 32]).dims());
        let verify = |attrs: &[u8], inputs: &[&Shape]| {
            let mut g = Graph::new("verify");
            let op = Op::Custom { name: WELCH_PEAKS.into(), num_inputs: inputs.len() as u32, attrs: attrs.to_vec() };
            let id = g.add_node(op, vec![], f32s(&[3, 32]));
            extension.verify(g.node(id), inputs)
        };
        assert_eq!(verify(&plain.to_bytes(), &[&segments]), Vec::<String>::new());
        assert_eq!(verify(&windowed, &[&segments, &f32s(&[256])]), Vec::<String>::new());
        assert_eq!(verify(&windowed, &[&segments]), [format!("{WELCH_PEAKS}: 1 operand, the attributes need 2")]);
        assert_eq!(verify(&plain.to_bytes(), &[]), [format!("{WELCH_PEAKS} takes the segments as operand 0")]);
    }
}
