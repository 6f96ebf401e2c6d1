//! Every fused op fitted to a kernel RLX can launch for it on the target
//! the pass decided for. RLX compiles and caches a custom GPU kernel per op
//! name, and launches one kernel per op, so:
//! - a one-pass plan becomes one op named for its specialisation
//!   (`rlx_opt.welch_peaks.wgpu.<key>`), its kernel registered under that name;
//! - a multi-pass plan becomes its passes as ops in sequence: `….load`
//!   (segments → spectra), `….stage<s>` for each radix-2 stage (spectra →
//!   spectra), `….peaks` (spectra → peaks), each with its kernel and a CPU
//!   kernel for a device that runs it through the host;
//! - a split plan runs in its unsplit form on RLX's GPUs (its kernels
//!   have arena entry points, but its passes are not yet ops here); RLX's
//!   CPU kernel runs every plan as asked;
//! - an op no RLX kernel takes here (the CPU's, a host call, a shape past
//!   the kernels' limits) keeps the fused op's name: RLX runs the CPU kernel,
//!   staged through the host on a GPU.
//!
//! The kernels are the sources in `kernels/`, specialised by
//! `lower::specialize` and fitted to RLX's arena by the template step
//! ([`Bindings::RlxArena`]).

use super::HostError;
use super::kernels::{CpuStep, CudaKernel, WgpuKernel, install_cpu_step, install_cuda, install_op, install_wgpu};
use crate::analysis::Target;
use crate::analysis::plan::{DeviceLimits, FftPlan, KernelPlan, plan};
use crate::fused::{Lowering, PlanName, WELCH_PEAKS, WelchPeaksAttrs};
use crate::ir::{DType, Graph, NodeId, Op, OpKind, TensorType, view};
use crate::lower::{Bindings, Specialization, cuda, grid, specialize as specialize_kernel, wgsl};
use std::hash::{Hash, Hasher};

/// Whether this build registers GPU kernels with RLX for `target`.
pub fn has_rlx_kernels(target: Target) -> bool {
    match target {
        Target::Cpu | Target::Wgpu => true,
        Target::Cuda => cfg!(feature = "rlx-cuda"),
        Target::Rocm | Target::Metal | Target::Mlx | Target::Tpu => false,
    }
}

/// Fit every fused op of `graph` to RLX's kernels for `target`, registering
/// the kernels it names. Returns how many ops now run on a GPU kernel.
pub fn specialize(graph: &mut Graph, target: Target) -> Result<usize, HostError> {
    super::kernels::install_kernels();
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
        let base = format!("{WELCH_PEAKS}.{}.{:016x}", target.name(), key(target, graph.node(id).op.text(), &input));
        let attr_bytes = match graph.node(id).op.kind() {
            OpKind::Custom { attrs, .. } => attrs.clone(),
            _ => unreachable!("fused ops are custom ops"),
        };
        let custom = |name: String, num_inputs: u32| Op::from_kind(OpKind::Custom { name, num_inputs, attrs: attr_bytes.clone() });
        match spec.kernel.fft {
            FftPlan::OnePass => {
                register(target, &base, &spec, Step::OnePass)?;
                install_op(&base);
                graph.node_mut(id).op = custom(base, attrs.num_inputs());
            }
            FftPlan::MultiPass => {
                let spectra = TensorType::new(&[2 * spec.kernel.spectra_len], DType::F32);
                let operands = graph.node(id).operands.clone();
                let load = format!("{base}.load");
                register(target, &load, &spec, Step::Load)?;
                install_cpu_step(&load, CpuStep::Load);
                let mut last = graph.add_node(custom(load, attrs.num_inputs()), &operands, spectra.clone());
                for s in 0..spec.kernel.log2n {
                    let stage = format!("{base}.stage{s}");
                    register(target, &stage, &spec, Step::Stage(s))?;
                    install_cpu_step(&stage, CpuStep::Stage);
                    last = graph.add_node(custom(stage, 1), &[last], spectra.clone());
                }
                let peaks = format!("{base}.peaks");
                register(target, &peaks, &spec, Step::Peaks)?;
                install_cpu_step(&peaks, CpuStep::Peaks);
                let node = graph.node_mut(id);
                node.op = custom(peaks, 1);
                node.operands = [last].into_iter().collect();
            }
        }
        on_gpu += 1;
    }
    view::ensure_dependency_order(graph);
    Ok(on_gpu)
}

/// The kernel plan of an op the pass lowered to `target`'s GPU kernel, if
/// RLX can launch it: RLX binds one window over every operand of an op, so
/// the operands together must fit one binding.
fn gpu_plan(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target) -> Option<Specialization> {
    let native = matches!((attrs.lowering?, target), (Lowering::Spirv, Target::Wgpu) | (Lowering::Cuda, Target::Cuda));
    if !native || !has_rlx_kernels(target) {
        return None;
    }
    let limits = DeviceLimits::assumed(target);
    // RLX launches the batch forms of the plans: a split plan's two passes
    // are not yet ops of their own here, so it runs as batch (or multipass).
    let unsplit = WelchPeaksAttrs { plan: attrs.plan.map(|p| PlanName::with(false, p.is_multipass())), ..attrs.clone() };
    let kernel = plan(&unsplit, input, target, &limits).ok()?.kernel?;
    let widest_op = match kernel.fft {
        FftPlan::OnePass => kernel.input_len + kernel.window_len + kernel.output_len,
        FftPlan::MultiPass => (kernel.input_len + kernel.window_len + 2 * kernel.spectra_len).max(4 * kernel.spectra_len),
    };
    (4 * widest_op <= limits.max_binding_bytes).then(|| specialize_kernel(&unsplit, kernel))
}

/// One op of a plan.
#[derive(Clone, Copy)]
enum Step {
    OnePass,
    Load,
    Stage(u32),
    Peaks,
}

impl Step {
    /// The entry point of this step, given a kernel's one-pass entry and its
    /// multi-pass entries in dispatch order (load, stage, peaks).
    fn entry(self, one_pass: &'static str, [load, stage, peaks]: [&'static str; 3]) -> &'static str {
        match self {
            Step::OnePass => one_pass,
            Step::Load => load,
            Step::Stage(_) => stage,
            Step::Peaks => peaks,
        }
    }
}

/// Register the kernel of `step` under `name`.
fn register(target: Target, name: &str, spec: &Specialization, step: Step) -> Result<(), HostError> {
    let k: &KernelPlan = &spec.kernel;
    let threads = k.threads as u64;
    let groups = match step {
        Step::OnePass | Step::Peaks => k.groups,
        Step::Load => k.spectra_len.div_ceil(threads),
        Step::Stage(_) => (k.spectra_len / 2).div_ceil(threads),
    };
    let stage = match step {
        Step::Stage(s) => s,
        _ => 0,
    };
    let bindings = Bindings::RlxArena { stage };
    match target {
        Target::Wgpu => {
            let entry = step.entry(wgsl::ENTRY, wgsl::MULTIPASS_ENTRIES);
            let (x, y) = grid(groups);
            install_wgpu(WgpuKernel { name: name.to_string(), wgsl: wgsl::source(spec, bindings)?, entry, workgroups: (x, y, 1) });
        }
        Target::Cuda => {
            let entry = step.entry(cuda::RLX_ENTRY, cuda::RLX_MULTIPASS_ENTRIES);
            // RLX launches a 1-D grid; the kernels index blocks with 32 bits.
            let blocks = u32::try_from(groups).map_err(|_| HostError::Rlx(format!("{name}: {groups} blocks exceed a 1-D CUDA grid")))?;
            install_cuda(CudaKernel { name: name.to_string(), source: cuda::source_with(spec, bindings)?, entry, threads: k.threads, blocks, stage });
        }
        other => unreachable!("no RLX GPU kernels for {other}"),
    }
    Ok(())
}

/// A key for one specialisation: the target, the op's attributes and the
/// operand's shape (stable within a process, where RLX's caches live).
fn key(target: Target, op_text: &str, input: &TensorType) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (target.name(), op_text, input.to_string()).hash(&mut h);
    h.finish()
}
