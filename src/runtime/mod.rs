//! Running graphs: tensors, the reference interpreter, and the kernels that
//! run the fused Welch-peaks op. The interpreter knows kernels only through
//! [`FusedKernel`]; the CPU ones live here, the GPU ones behind their
//! features (`wgpu_kernel`, `cuda_kernel`).

pub mod calibrate;
#[cfg(feature = "cuda")]
pub mod cuda_kernel;
#[cfg(feature = "cuda")]
pub mod cuda_timing;
pub mod error;
pub mod fft;
pub mod interp;
pub mod log_mel;
pub mod memory;
pub mod tensor;
pub mod welch;
#[cfg(feature = "wgpu")]
pub mod wgpu_kernel;

pub use error::RuntimeError;
pub use interp::run;
pub use tensor::{Tensor, TensorRef};

use crate::fused::{LogMelAttrs, WelchPeaksAttrs};
use crate::ir::{Graph, OpKind};
use rand::{RngExt, SeedableRng};
use std::collections::HashMap;

/// Hint the cache to load `data` (a no-op where the hint does not exist):
/// the CPU kernels, bound by reading their input, start on the next
/// segments or frames while the current ones are transformed.
pub(crate) fn prefetch(data: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    for line in data.chunks(16) {
        // SAFETY: prefetching is a hint; it never faults, whatever the address.
        unsafe { std::arch::x86_64::_mm_prefetch(line.as_ptr().cast(), std::arch::x86_64::_MM_HINT_T0) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// One way to run the fused op; the interpreter runs every other op itself.
pub trait FusedKernel {
    /// What runs the op, for traces and messages (`cpu`, the GPU's name, …).
    fn name(&self) -> String;
    /// The op's result for one operand (and its window, when it has one).
    fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError>;
    /// The fused log-mel op's result for its frames, filters (and window).
    /// A kernel set without a log-mel kernel refuses it, naming itself.
    fn run_log_mel(&self, attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        let _ = (attrs, input, filters, window);
        Err(RuntimeError::NoKernel { op: crate::fused::LOG_MEL, kernel: self.name() })
    }
}

/// The op's definition in plain code ([`welch::reference`]): the oracle.
pub struct Reference;

impl FusedKernel for Reference {
    fn name(&self) -> String {
        "reference".into()
    }

    fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        welch::reference(attrs, input, window)
    }

    fn run_log_mel(&self, attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        log_mel::reference(attrs, input, filters, window)
    }
}

/// The native CPU kernel ([`welch::cpu_kernel`]).
pub struct CpuKernel;

impl FusedKernel for CpuKernel {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        welch::cpu_kernel(attrs, input.view(), window.map(Tensor::view))
    }

    fn run_log_mel(&self, attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        log_mel::cpu_kernel(attrs, input.view(), filters.view(), window.map(Tensor::view))
    }
}

/// How rlx-run runs a fused graph: a target's kernels for the ops lowered
/// to them, the CPU kernel for the ops the pass made host calls
/// (`lowering: host`), as RLX's runtime does. Each op is dispatched by its
/// recorded `lowering`.
pub struct DispatchByLowering {
    kernels: Box<dyn FusedKernel>,
    /// Why each op fused for the CPU that the device took no kernel for
    /// ran on the CPU kernel instead, once each: rlx-run says so.
    on_the_host: std::sync::Mutex<Vec<String>>,
}

impl DispatchByLowering {
    pub fn new(kernels: Box<dyn FusedKernel>) -> Self {
        DispatchByLowering { kernels, on_the_host: Default::default() }
    }

    /// Why ops fused for the CPU ran on the CPU kernel rather than the
    /// device's, each reason once.
    pub fn ran_on_the_host(&self) -> Vec<String> {
        self.on_the_host.lock().map(|notes| notes.clone()).unwrap_or_default()
    }

    /// An op fused for the CPU (`lowering: cpu`) that no kernel of this
    /// device takes (a log-mel n_fft with a prime factor above 5 on a GPU,
    /// say) runs on the CPU kernel, the host call the pass would have made
    /// it for this target; it was refused (an adversarial run). `ran` is
    /// the device's attempt, refused before it touched the device.
    fn on_the_host_where_untaken(&self, lowering: Option<crate::fused::Lowering>, ran: Result<Tensor, RuntimeError>, on_the_host: impl FnOnce() -> Result<Tensor, RuntimeError>) -> Result<Tensor, RuntimeError> {
        use crate::lower::LowerError;
        let why = match &ran {
            Err(RuntimeError::Lower(LowerError::Unsupported(why)) | RuntimeError::Unsupported(why)) if lowering == Some(crate::fused::Lowering::Cpu) => why.to_string(),
            _ => return ran,
        };
        if let Ok(mut notes) = self.on_the_host.lock()
            && !notes.contains(&why)
        {
            notes.push(why);
        }
        on_the_host()
    }
}

impl FusedKernel for DispatchByLowering {
    fn name(&self) -> String {
        self.kernels.name()
    }

    fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        match attrs.lowering {
            Some(crate::fused::Lowering::Host) => CpuKernel.run(attrs, input, window),
            lowering => self.on_the_host_where_untaken(lowering, self.kernels.run(attrs, input, window), || CpuKernel.run(attrs, input, window)),
        }
    }

    fn run_log_mel(&self, attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        match attrs.lowering {
            Some(crate::fused::Lowering::Host) => CpuKernel.run_log_mel(attrs, input, filters, window),
            lowering => self.on_the_host_where_untaken(lowering, self.kernels.run_log_mel(attrs, input, filters, window), || CpuKernel.run_log_mel(attrs, input, filters, window)),
        }
    }
}

/// The operands fit the attributes: the input's shape (by the op's one
/// definition, `WelchPeaksAttrs::batch_of`) and the window's length. Every
/// kernel checks this before it reads a value.
pub fn check_operands(attrs: &WelchPeaksAttrs, input: TensorRef<'_>, window: Option<TensorRef<'_>>) -> Result<Vec<usize>, RuntimeError> {
    // The kernels plan FFTs and size per-thread buffers by n_fft.
    if attrs.n_fft > crate::limits::MAX_CPU_N_FFT {
        return Err(RuntimeError::Operands(format!("n_fft {} is longer than the kernels plan (at most {})", attrs.n_fft, crate::limits::MAX_CPU_N_FFT)));
    }
    let batch = attrs.batch_shape(input.shape).map_err(|e| RuntimeError::Operands(e.to_string()))?;
    match (attrs.window, window) {
        (true, Some(w)) if w.len() as u64 == attrs.frame_len => Ok(batch),
        (false, None) => Ok(batch),
        (true, Some(w)) => Err(RuntimeError::Operands(format!("the window has {} values, the op needs {}", w.len(), attrs.frame_len))),
        (true, None) => Err(RuntimeError::Operands("the op takes a window and none was given".into())),
        (false, Some(_)) => Err(RuntimeError::Operands("the op takes no window but was given one".into())),
    }
}

/// The graph's inputs by name (Input and Param nodes), each name once, in
/// graph order, with its shape: what `--input NAME=FILE.npy` and random
/// inputs fill. Nodes are fed by name, so two nodes of one name take the
/// same tensor: fine where they agree on its type, and refused here, naming
/// both nodes, where they do not (no one tensor fits both; that once
/// surfaced as a shape error at whichever node ran second).
pub fn graph_inputs(graph: &Graph) -> Result<Vec<(String, Vec<usize>)>, RuntimeError> {
    let mut seen: Vec<(String, &crate::ir::Node, Vec<usize>)> = Vec::new();
    // Where each name is in `seen`: a graph of 10^5 parameters looked up by scanning was quadratic.
    let mut index: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    for node in graph.nodes() {
        let (OpKind::Input { name } | OpKind::Param { name }) = node.op.kind() else { continue };
        if let Some((_, first, _)) = index.get(name.as_str()).map(|&i| &seen[i]) {
            if first.ty != node.ty {
                let message = format!(
                    "two nodes take it, %{} as {} and %{} as {}: no one tensor can feed both (rename one of them)",
                    first.label, first.ty, node.label, node.ty
                );
                return Err(RuntimeError::Input { name: name.clone(), message });
            }
            continue;
        }
        let shape = Tensor::dims_of(&node.ty).map_err(|e| RuntimeError::Input { name: name.clone(), message: e.to_string() })?;
        index.insert(name, seen.len());
        seen.push((name.clone(), node, shape));
    }
    Ok(seen.into_iter().map(|(name, _, shape)| (name, shape)).collect())
}

/// Uniform random values in [-1, 1) for every Input and Param of `graph`
/// (one tensor per name, see [`graph_inputs`]), the same for the same seed.
pub fn random_inputs(graph: &Graph, seed: u64) -> Result<HashMap<String, Tensor>, RuntimeError> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut inputs = HashMap::new();
    for (name, shape) in graph_inputs(graph)? {
        let n = shape.iter().product();
        let data = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        inputs.insert(name, Tensor::new(shape, data));
    }
    Ok(inputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fused::Lowering;

    /// A target kernel that refuses every op, to see which ops reach it.
    struct Refuses;

    impl FusedKernel for Refuses {
        fn name(&self) -> String {
            "refuses".into()
        }

        fn run(&self, _: &WelchPeaksAttrs, _: &Tensor, _: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
            Err(RuntimeError::Operands("reached the target's kernel".into()))
        }
    }

    #[test]
    fn host_calls_run_on_the_cpu_whatever_the_target() {
        let kernels = DispatchByLowering::new(Box::new(Refuses));
        let x = Tensor::new(vec![2, 8], (0..16).map(|i| i as f32).collect());
        let host = WelchPeaksAttrs { lowering: Some(Lowering::Host), ..WelchPeaksAttrs::rlx(8, 2, 3) };
        assert_eq!(kernels.run(&host, &x, None).unwrap(), CpuKernel.run(&host, &x, None).unwrap());
        let native = WelchPeaksAttrs { lowering: Some(Lowering::Spirv), ..host };
        assert!(kernels.run(&native, &x, None).unwrap_err().to_string().contains("reached the target's kernel"));
    }

    /// A device that takes no kernel for the op, as a GPU for n_fft 1.
    struct Untaken;

    impl FusedKernel for Untaken {
        fn name(&self) -> String {
            "untaken".into()
        }

        fn run(&self, attrs: &WelchPeaksAttrs, _: &Tensor, _: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
            Err(crate::lower::LowerError::Unsupported(crate::analysis::plan::Unsupported::FftLength { n_fft: attrs.n_fft }).into())
        }
    }

    /// Only an op fused for the CPU falls back to the CPU kernel where the
    /// device takes none, and the reason is kept once for rlx-run to say.
    #[test]
    fn ops_fused_for_the_cpu_run_there_where_the_device_takes_none() {
        let kernels = DispatchByLowering::new(Box::new(Untaken));
        let x = Tensor::new(vec![2, 8], (0..16).map(|i| i as f32).collect());
        let cpu = WelchPeaksAttrs { lowering: Some(Lowering::Cpu), ..WelchPeaksAttrs::rlx(8, 2, 3) };
        for _ in 0..2 {
            assert_eq!(kernels.run(&cpu, &x, None).unwrap(), CpuKernel.run(&cpu, &x, None).unwrap());
        }
        assert_eq!(kernels.ran_on_the_host(), ["the GPU kernels need n_fft ≥ 2, not 8 (the CPU kernel takes any length)"]);
        for lowering in [Some(Lowering::Spirv), None] {
            let other = WelchPeaksAttrs { lowering, ..cpu.clone() };
            assert!(kernels.run(&other, &x, None).is_err(), "{lowering:?}");
        }
    }
}
