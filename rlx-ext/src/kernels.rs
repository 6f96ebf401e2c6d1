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
use rlx_ir::op_registry::{OpExtension, register_op};
use rlx_ir::{DType, Shape};
use crate::registration::{once_per_name, static_dims};
use std::sync::Arc;

/// The op extension and CPU kernel of `rlx_opt.welch_peaks`. Idempotent.
pub fn install_kernels() {
    install_op(WELCH_PEAKS);
}

/// The op extension and CPU kernel under `name` (the fused op's own name,
/// or a specialisation's, whose attributes are the fused op's).
pub fn install_op(name: &str) {
    once_per_name(&format!("op:{name}"), || {
        register_op(Arc::new(WelchPeaksExtension { name: name.to_string() }));
        register_cpu_kernel(Arc::new(WelchPeaksCpu { name: name.to_string() }));
    });
}

/// The result shape of the op with `attrs` (JSON bytes) on an operand of `input`.
fn result_shape(attrs: &[u8], input: &Shape) -> Result<Shape, String> {
    let attrs = WelchPeaksAttrs::from_bytes(attrs).map_err(|e| e.to_string())?;
    let mut dims = attrs.batch_shape(&static_dims(input)?).map_err(|e| e.to_string())?;
    dims.push(2 * attrs.k as usize);
    Ok(Shape::new(&dims, DType::F32))
}

struct WelchPeaksExtension {
    name: String,
}

impl OpExtension for WelchPeaksExtension {
    fn name(&self) -> &str {
        &self.name
    }

    /// The segments; a window is a second operand when the attributes say
    /// so (graphs carry the count in the op).
    fn num_inputs(&self) -> usize {
        1
    }

    /// A shape that cannot be inferred is reported by [`Self::verify`];
    /// this hook has no error path, so it answers the operand's shape.
    fn infer_shape(&self, inputs: &[&Shape], attrs: &[u8]) -> Shape {
        match inputs.first() {
            Some(input) => result_shape(attrs, input).unwrap_or_else(|_| (*input).clone()),
            None => Shape::new(&[0], DType::F32),
        }
    }

    fn verify(&self, node: &rlx_ir::Node, inputs: &[&Shape]) -> Vec<String> {
        let rlx_ir::Op::Custom { attrs, .. } = &node.op else { return vec![format!("{} is not a custom op", self.name)] };
        let Some(input) = inputs.first() else { return vec![format!("{} takes the segments as operand 0", self.name)] };
        let mut errors = Vec::new();
        match result_shape(attrs, input) {
            Ok(shape) if shape.dims() != node.shape.dims() => errors.push(format!("{}: result shape {:?}, the op computes {:?}", self.name, node.shape, shape)),
            Ok(_) => {}
            Err(e) => errors.push(format!("{}: {e}", self.name)),
        }
        if let Ok(parsed) = WelchPeaksAttrs::from_bytes(attrs) {
            let want = parsed.num_inputs() as usize;
            if inputs.len() != want {
                errors.push(format!("{}: {} operands, the attributes need {want}", self.name, inputs.len()));
            }
        }
        errors
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
