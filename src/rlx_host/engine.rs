//! Graphs run through RLX's own `Session` with the fused op's kernels
//! installed (`rlx-run --engine=rlx`): fused ops are fitted to RLX's kernels
//! for the target first ([`super::specialize`]), nothing else is rewritten,
//! so an unfused graph runs as RLX alone runs it.

use super::{HostError, convert, specialize::specialize};
use crate::analysis::Target;
use crate::ir::{Graph, OpKind};
use crate::runtime::Tensor;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// RLX's device for a target.
pub fn device_for(target: Target) -> Result<rlx_runtime::Device, HostError> {
    match target {
        Target::Cpu => Ok(rlx_runtime::Device::Cpu),
        Target::Wgpu => Ok(rlx_runtime::Device::Gpu),
        #[cfg(feature = "rlx-cuda")]
        Target::Cuda => Ok(rlx_runtime::Device::Cuda),
        #[cfg(not(feature = "rlx-cuda"))]
        Target::Cuda => Err(HostError::Rlx("RLX's CUDA backend needs rlx-opt built with the `rlx-cuda` feature".into())),
        other => Err(HostError::Rlx(format!("target `{other}` has no RLX backend here (cpu and wgpu do, cuda with the `rlx-cuda` feature)"))),
    }
}

/// One kernel call the fused op's CPU kernel made, for traces.
#[derive(Debug, Clone)]
pub struct KernelCall {
    pub name: String,
    pub start: Instant,
    pub duration: Duration,
}

/// Kernel calls recorded since [`take_kernel_calls`], while recording.
static CALLS: Mutex<Option<Vec<KernelCall>>> = Mutex::new(None);

/// Record the calls of the fused op's CPU kernel from now on.
pub fn record_kernel_calls() {
    *CALLS.lock().unwrap_or_else(|p| p.into_inner()) = Some(Vec::new());
}

/// The calls recorded so far (recording goes on).
pub fn take_kernel_calls() -> Vec<KernelCall> {
    CALLS.lock().unwrap_or_else(|p| p.into_inner()).as_mut().map(std::mem::take).unwrap_or_default()
}

pub(super) fn record_kernel(name: &str, start: Instant) {
    if let Some(calls) = CALLS.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        calls.push(KernelCall { name: name.to_string(), start, duration: start.elapsed() });
    }
}

/// Uses of the fused op's native GPU kernels by RLX's backends, process-wide:
/// what a test reads to know that a `Session` ran an op on the GPU rather
/// than hosting it (a hosted op runs a CPU kernel, which [`record_kernel`]
/// records). wgpu counts an op when a `Session` compiles it to a dispatch of
/// its WGSL kernel (RLX asks for the grid then, and replays that dispatch on
/// every run); CUDA counts a launch (RLX asks for the kernel's extras at each).
static NATIVE_GPU_USES: AtomicUsize = AtomicUsize::new(0);

/// How many times RLX has used a native GPU kernel of the fused op in this
/// process (see [`NATIVE_GPU_USES`]); read before and after a compile and run.
pub fn native_gpu_uses() -> usize {
    NATIVE_GPU_USES.load(Ordering::SeqCst)
}

pub(super) fn count_native_gpu_use() {
    NATIVE_GPU_USES.fetch_add(1, Ordering::SeqCst);
}

/// A graph compiled by RLX for one device.
pub struct Compiled {
    compiled: rlx_runtime::CompiledGraph,
    /// The shape of each output, from rlx-opt's graph.
    output_shapes: Vec<Vec<usize>>,
    /// How many fused ops run on a GPU kernel registered with RLX.
    pub gpu_kernels: usize,
    pub compile_time: Duration,
}

/// RLX's message for a panic it raised (its compile and run report some
/// errors only by panicking).
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload.downcast_ref::<String>().cloned().or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "panicked".into())
}

/// Compile `graph` with RLX for `target`, the fused op's kernels installed.
pub fn compile(graph: &Graph, target: Target) -> Result<Compiled, HostError> {
    let device = device_for(target)?;
    let mut graph = graph.clone();
    let gpu_kernels = specialize(&mut graph, target)?;
    let output_shapes = graph.outputs.iter().map(|id| Tensor::dims_of(&graph.node(*id).ty).map_err(HostError::Rlx)).collect::<Result<_, _>>()?;
    let rlx = convert::to_rlx(&graph)?;
    let started = Instant::now();
    let compiled = catch_unwind(AssertUnwindSafe(|| {
        let session = rlx_runtime::Session::try_new(device).map_err(|e| e.to_string())?;
        session.try_compile(rlx).map_err(|e| e.to_string())
    }))
    .map_err(|p| HostError::Rlx(format!("compile: {}", panic_message(p))))?
    .map_err(|e| HostError::Rlx(format!("compile: {e}")))?;
    Ok(Compiled { compiled, output_shapes, gpu_kernels, compile_time: started.elapsed() })
}

impl Compiled {
    /// One run on `inputs` (by the graph's input names).
    pub fn run(&mut self, inputs: &HashMap<String, Tensor>) -> Result<Vec<Tensor>, HostError> {
        let named: Vec<(&str, &[f32])> = inputs.iter().map(|(n, t)| (n.as_str(), t.data.as_slice())).collect();
        let compiled = &mut self.compiled;
        let outputs = catch_unwind(AssertUnwindSafe(|| compiled.try_run(&named).map_err(|e| e.to_string())))
            .map_err(|p| HostError::Rlx(format!("run: {}", panic_message(p))))?
            .map_err(|e| HostError::Rlx(format!("run: {e}")))?;
        if outputs.len() != self.output_shapes.len() {
            return Err(HostError::Rlx(format!("run: {} outputs, the graph returns {}", outputs.len(), self.output_shapes.len())));
        }
        outputs
            .into_iter()
            .zip(&self.output_shapes)
            .map(|(data, shape)| {
                let want: usize = shape.iter().product();
                if data.len() == want { Ok(Tensor::new(shape.clone(), data)) } else { Err(HostError::Rlx(format!("run: an output of {} values, its shape {shape:?} holds {want}", data.len()))) }
            })
            .collect()
    }
}

/// Whether `graph` holds a fused op (what `--engine=rlx` needs kernels for).
pub fn has_fused_ops(graph: &Graph) -> bool {
    graph.nodes().iter().any(|n| matches!(n.op.kind(), OpKind::Custom { name, .. } if name.starts_with(crate::fused::NAMESPACE)))
}
