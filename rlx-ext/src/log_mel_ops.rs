//! Every fused log-mel op the pass lowered to the WGSL kernel, fitted to
//! RLX's wgpu backend, which launches one kernel per op: the op becomes two
//! ops, each with its kernel registered under a name of its own (RLX caches
//! compiled kernels by op name):
//! - `rlx_opt.log_mel.wgpu.<key>.bands` (the filters → each filter's band,
//!   `[n_mels, 2]`: once per run, not per frame);
//! - `rlx_opt.log_mel.wgpu.<key>` (the frames, the filters, the bands and the
//!   window when the op has one → the mel values), in the fused op's place.
//!
//! Both also have CPU kernels, for a device that runs them through the host
//! (RLX's straddle guard). An op the WGSL kernel cannot take in RLX's arena
//! keeps the fused op's name and runs its CPU kernel, staged through the host.

use crate::error::ExtError;
use crate::kernels::{WgpuKernel, install_wgpu};
use crate::log_mel::{install_bands_cpu, install_specialized_cpu};
use crate::specialize::rlx_limits;
use rlx_opt::analysis::Target;
use rlx_opt::fused::{LOG_MEL, LogMelAttrs, Lowering};
use rlx_opt::ir::{DType, Graph, NodeId, Op, OpKind, TensorType};
use rlx_opt::lower::Bindings;
use rlx_opt::lower::log_mel::{LogMelEntry, LogMelLaunch, LogMelSpec, launches, specialize as specialize_kernel, wgsl_source_with};

/// The suffix of the op that finds the bands.
pub const BANDS_SUFFIX: &str = "bands";

/// Fit every log-mel op of `graph` lowered to SPIR-V to RLX's wgpu kernels
/// when `target` is wgpu. Returns how many ops now run on the WGSL kernel.
pub fn specialize_log_mel(graph: &mut Graph, target: Target) -> Result<usize, ExtError> {
    if target != Target::Wgpu {
        return Ok(0);
    }
    let fused: Vec<(NodeId, LogMelAttrs)> = graph
        .ids()
        .filter_map(|id| match graph.node(id).op.log_mel() {
            Some(Ok(attrs)) if attrs.lowering == Some(Lowering::Spirv) => Some((id, attrs.clone())),
            _ => None,
        })
        .collect();
    let mut on_gpu = 0;
    for (id, attrs) in fused {
        let node = graph.node(id);
        let operands: Vec<NodeId> = node.operands.iter().copied().collect();
        let Some(spec) = wgpu_spec(&attrs, &graph.node(operands[0]).ty) else { continue };
        let OpKind::Custom { attrs: attr_bytes, .. } = node.op.kind() else {
            return Err(ExtError::Rlx(format!("fused op %{}: not a custom op", node.label)));
        };
        let attr_bytes = attr_bytes.clone();
        let base = format!("{LOG_MEL}.{}.{:016x}", target.name(), crate::specialize::key(target, &node.op.text(), &graph.node(operands[0]).ty));
        let bands_name = format!("{base}.{BANDS_SUFFIX}");
        let wgsl = wgsl_source_with(&spec, Bindings::RlxArena { stage: 0 })?;
        for launch in launches(&spec) {
            let name = if launch.entry == LogMelEntry::MelBands { bands_name.clone() } else { base.clone() };
            install_wgpu(wgpu_kernel(name, &wgsl, &launch));
        }
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

/// The op's kernel plan on RLX's wgpu device, if RLX can launch it: its
/// operands, the bands and its result must fit the one binding RLX's wgpu
/// backend makes over an op's operands and result.
fn wgpu_spec(attrs: &LogMelAttrs, input: &TensorType) -> Option<LogMelSpec> {
    let limits = rlx_limits(Target::Wgpu);
    let shape: Vec<usize> = input.static_dims()?.iter().map(|d| usize::try_from(*d).ok()).collect::<Option<_>>()?;
    let spec = specialize_kernel(attrs, &shape, Target::Wgpu, &limits).ok()?;
    let values = spec.input_len + spec.filters_len + 2 * spec.mels + if attrs.window { spec.window_len } else { 0 } + spec.output_len;
    (4 * values <= limits.max_binding_bytes).then_some(spec)
}

fn wgpu_kernel(name: String, wgsl: &str, launch: &LogMelLaunch) -> WgpuKernel {
    let (x, y) = launch.grid();
    WgpuKernel { name, wgsl: wgsl.to_string(), entry: launch.entry.name(), workgroups: (x, y, 1) }
}
