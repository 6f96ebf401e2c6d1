//! Every fused op fitted to a kernel RLX can launch for it on the target
//! the pass decided for. RLX compiles and caches a custom GPU kernel per op
//! name, and launches one kernel per op, so:
//! - a one-pass plan becomes one op named for its specialisation
//!   (`rlx_opt.welch_peaks.wgpu.<key>`), its kernel registered under that name;
//! - a multi-pass plan becomes its passes as ops in sequence: the four-step
//!   FFT's `….columns` (segments → spectra) and `….rows` (spectra →
//!   spectra) (WGSL, and CUDA by default), or, on CUDA with
//!   `RLX_OPT_CUDA_FOUR_STEP=0` and a power of two, `….load` (segments →
//!   spectra) and `….stage<s>` for each radix-2 stage (spectra → spectra);
//!   then `….peaks` (spectra → peaks); each with its kernel and a CPU
//!   kernel for a device that runs it through the host;
//! - a split plan becomes its passes the same way: `….partial` (segments,
//!   or a multi-pass plan's spectra, → the partial power spectra of each
//!   chunk of an entry's segments), then `….peaks` (partials → peaks);
//! - an op no RLX kernel takes here (the CPU's, a host call, a shape past
//!   the kernels' limits) keeps the fused op's name: RLX runs the CPU kernel,
//!   staged through the host on a GPU.
//!
//! The kernels are the sources in `kernels/`, specialised by
//! `lower::specialize` and fitted to RLX's arena by the template step
//! ([`Bindings::RlxArena`]).

use crate::error::ExtError;
use crate::fitting::{key, rlx_cuda_arch, rlx_cuda_sm, rlx_limits};
use crate::kernels::{CudaKernel, WgpuKernel, install_cpu_step, install_cuda, install_op, install_wgpu};
use rlx_opt::analysis::Target;
use rlx_opt::analysis::plan::{KernelGeometry, plan};
use rlx_opt::fused::{Lowering, WELCH_PEAKS, WelchPeaksAttrs};
use rlx_opt::ir::{DType, Graph, NodeId, Op, OpKind, TensorType, view};
use rlx_opt::lower::{Bindings, KernelEntry, Launch, Specialization, cuda, launches, specialize as specialize_kernel, wgsl};
use rlx_opt::runtime::welch::passes::CpuPass;

/// Whether this build registers GPU kernels with RLX for `target`.
pub fn has_rlx_kernels(target: Target) -> bool {
    match target {
        Target::Cpu | Target::Wgpu => true,
        Target::Cuda => cfg!(feature = "cuda"),
        Target::Rocm | Target::Metal | Target::Mlx | Target::Tpu => false,
    }
}

/// Fit every fused op of `graph` to RLX's kernels for `target`, registering
/// the kernels it names (the log-mel ops: [`crate::log_mel_ops`]). Returns
/// how many ops now run on a GPU kernel.
pub fn specialize(graph: &mut Graph, target: Target) -> Result<usize, ExtError> {
    crate::kernels::install_kernels();
    crate::log_mel::install_log_mel();
    let fused: Vec<(NodeId, WelchPeaksAttrs)> = graph
        .ids()
        .filter_map(|id| match graph.node(id).op.welch_peaks() {
            Some(Ok(attrs)) => Some((id, attrs.clone())),
            _ => None,
        })
        .collect();
    let mut on_gpu = 0;
    for (id, attrs) in fused {
        let input = graph.node(graph.node(id).operands[0]).ty.clone();
        let Some(spec) = gpu_plan(&attrs, &input, target) else { continue };
        let base = format!("{WELCH_PEAKS}.{}.{:016x}", target.name(), key(target, &graph.node(id).op.text(), &input));
        let OpKind::Custom { attrs: attr_bytes, .. } = graph.node(id).op.kind() else {
            return Err(ExtError::Rlx(format!("fused op %{}: not a custom op", graph.node(id).label)));
        };
        let attr_bytes = attr_bytes.clone();
        let custom = |name: String, num_inputs: u32| Op::from_kind(OpKind::Custom { name, num_inputs, attrs: attr_bytes.clone() });
        let steps = steps(&spec.kernel);
        let mut sources = CudaSources::of(&spec);
        if let [only] = steps.as_slice() {
            register(target, &base, &mut sources, only)?;
            install_op(&base);
            graph.node_mut(id).op = custom(base, attrs.num_inputs());
        } else {
            // Every op but the last is new, the first taking the fused op's
            // operands; the last takes the fused op's place.
            let mut operands: Vec<NodeId> = graph.node(id).operands.iter().copied().collect();
            let (last, passes) = steps.split_last().expect("a plan has a step");
            let mut num_inputs = attrs.num_inputs();
            for step in passes {
                let name = format!("{base}.{}", step.suffix);
                register(target, &name, &mut sources, step)?;
                install_cpu_step(&name, step.cpu);
                let result = TensorType::new(&[step.result_len], DType::F32);
                let node = graph.add_node(custom(name, num_inputs), &operands, result);
                (operands, num_inputs) = (vec![node], 1);
            }
            let name = format!("{base}.{}", last.suffix);
            register(target, &name, &mut sources, last)?;
            install_cpu_step(&name, last.cpu);
            let node = graph.node_mut(id);
            node.op = custom(name, 1);
            node.operands = operands.into_iter().collect();
        }
        on_gpu += 1;
    }
    on_gpu += crate::log_mel_ops::specialize_log_mel(graph, target)?;
    view::ensure_dependency_order(graph);
    Ok(on_gpu)
}

/// The kernel plan of an op the pass lowered to `target`'s GPU kernel, if
/// RLX can launch it: RLX's wgpu backend binds one window over every
/// operand of an op, so each op's operands and result together must fit one
/// binding; rlx-cuda passes arena offsets as 32-bit element counts, so on
/// CUDA the whole chain of ops (its operands and every result) must stay
/// below 2³² values. (The rest of the graph shares that arena: past 16 GiB
/// in all, RLX's own CUDA ops wrap their offsets too.)
fn gpu_plan(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target) -> Option<Specialization> {
    let native = matches!((attrs.lowering?, target), (Lowering::Spirv, Target::Wgpu) | (Lowering::Cuda, Target::Cuda));
    if !native || !has_rlx_kernels(target) {
        return None;
    }
    let limits = rlx_limits(target);
    let kernel = plan(attrs, input, target, &limits).ok()?.kernel?;
    let mut operands = kernel.input_len + kernel.window_len;
    let (mut widest, mut chain) = (0, operands);
    for step in steps(&kernel) {
        widest = widest.max(operands + step.result_len);
        chain += step.result_len;
        operands = step.result_len;
    }
    let fits = match target {
        Target::Cuda => chain <= u32::MAX as u64,
        _ => 4 * widest <= limits.max_binding_bytes,
    };
    fits.then(|| specialize_kernel(attrs, kernel))
}

/// One op of a plan as RLX runs it: one launch of [`launches`], its op's
/// name suffix, its result's length (f32 values), and its CPU pass.
struct Step {
    launch: Launch,
    suffix: String,
    result_len: u64,
    cpu: CpuPass,
}

/// The ops of `k`'s plan, one per launch, in order: one for a one-pass
/// batch plan; a multi-pass plan's `columns`, `rows` and `peaks` (the
/// four-step FFT: WGSL's, and CUDA's by default) or `load`, a `stage<s>` per
/// radix-2 stage and `peaks` (CUDA's power-of-two lengths with
/// `RLX_OPT_CUDA_FOUR_STEP=0`); a split plan's passes ending in `partial`
/// then `peaks`.
fn steps(k: &KernelGeometry) -> Vec<Step> {
    launches(k)
        .into_iter()
        .map(|launch| {
            let suffix = match (launch.entry, launch.stage) {
                (KernelEntry::Load | KernelEntry::Columns | KernelEntry::Rows, _) => launch.entry.name().to_string(),
                (KernelEntry::Stage, stage) => format!("stage{}", stage.unwrap_or(0)),
                (KernelEntry::PartialPsd | KernelEntry::PartialOf, _) => "partial".to_string(),
                (KernelEntry::PeaksOf | KernelEntry::PeaksOfPartials, _) => "peaks".to_string(),
                // The one-pass batch kernel: the op itself (its CPU kernel is the op's).
                (KernelEntry::WelchPeaks, _) => String::new(),
            };
            Step { suffix, result_len: launch.writes().f32_len(k), cpu: CpuPass::of(&launch, k), launch }
        })
        .collect()
}

/// One op's CUDA sources, one per binding of its steps: a split plan's
/// two steps bind alike, and with the occupancy form each source is
/// compiled for RLX's device's arch to find its bound
/// and SM (`cuda::source_as_compiled`, [`rlx_cuda_arch`], [`rlx_cuda_sm`]), once.
struct CudaSources<'s> {
    spec: &'s Specialization,
    made: Vec<(Bindings, String)>,
}

impl<'s> CudaSources<'s> {
    fn of(spec: &'s Specialization) -> Self {
        CudaSources { spec, made: Vec::new() }
    }

    fn source(&mut self, bindings: Bindings) -> Result<String, ExtError> {
        if let Some((_, source)) = self.made.iter().find(|(b, _)| *b == bindings) {
            return Ok(source.clone());
        }
        let source = cuda::source_as_compiled(self.spec, bindings, rlx_cuda_arch(), rlx_cuda_sm())?;
        self.made.push((bindings, source.clone()));
        Ok(source)
    }
}

/// Register the kernel of `step` under `name`.
fn register(target: Target, name: &str, sources: &mut CudaSources<'_>, step: &Step) -> Result<(), ExtError> {
    let spec = sources.spec;
    let launch = &step.launch;
    let bindings = Bindings::RlxArena { stage: launch.stage.unwrap_or(0) };
    match target {
        Target::Wgpu => {
            let (x, y) = launch.grid();
            install_wgpu(WgpuKernel { name: name.to_string(), wgsl: wgsl::source(spec, bindings)?, entry: launch.entry.name(), workgroups: (x, y, 1) });
        }
        Target::Cuda => {
            // RLX launches a 1-D grid; the kernels index blocks with 32 bits.
            let blocks = u32::try_from(launch.groups).map_err(|_| ExtError::Rlx(format!("{name}: {} blocks exceed a 1-D CUDA grid", launch.groups)))?;
            let entry = cuda::rlx_entry(launch.entry);
            let stage = launch.stage.unwrap_or(0);
            install_cuda(CudaKernel { name: name.to_string(), source: sources.source(bindings)?, entry, threads: spec.kernel.threads, blocks, stage });
        }
        // `gpu_plan` plans only for targets with RLX kernels.
        other => return Err(ExtError::Rlx(format!("{name}: RLX has no GPU kernels for {other}"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_opt::analysis::plan::DeviceLimits;
    use rlx_opt::fused::PlanName;

    /// A split plan's two steps bind alike in RLX's arena, and the op makes
    /// (and, with the occupancy form, compiles) their CUDA source once.
    #[test]
    fn a_split_plans_steps_share_one_cuda_source() {
        let attrs = WelchPeaksAttrs { plan: Some(PlanName::Split), ..WelchPeaksAttrs::rlx(256, 64, 4) };
        let spec = rlx_opt::lower::specialize_for(&attrs, &[64, 256], Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap();
        assert_eq!(spec.kernel.plan, PlanName::Split);
        let steps = steps(&spec.kernel);
        assert_eq!(steps.len(), 2);
        let mut sources = CudaSources::of(&spec);
        for step in &steps {
            sources.source(Bindings::RlxArena { stage: step.launch.stage.unwrap_or(0) }).unwrap();
        }
        assert_eq!(sources.made.len(), 1, "one source for both steps");
    }
}
