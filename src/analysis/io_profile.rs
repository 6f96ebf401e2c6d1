//! RLX's static IO profile of one forward pass (`rlx_compile::fusion_benefit`),
//! reproduced rule for rule so that gate decisions match RLX's.

use crate::ir::{Graph, NodeId, Op, OpKind, TensorType};
use serde::Serialize;

/// Host-visible traffic and sync points of a graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct IoProfile {
    /// One per node, except ops that only describe memory (Input, Param,
    /// Constant, Reshape, Transpose, Narrow).
    pub kernel_launches: u64,
    /// One per op that RLX runs as a host thunk (LogMel, LogMelBackward,
    /// Custom, WelchPeaks) and so forces a device sync.
    pub sync_points: u64,
    /// Bytes of the graph outputs that are computed by a kernel.
    pub host_output_bytes: u64,
    /// Per launched node: operand bytes plus result bytes.
    pub device_traffic_bytes: u64,
}

impl IoProfile {
    /// RLX's readback estimate: outputs, plus a quarter of the device traffic
    /// when host and device do not share memory.
    pub fn host_readback_bytes(&self, unified: bool) -> u64 {
        if unified {
            self.host_output_bytes
        } else {
            self.host_output_bytes.saturating_add(self.device_traffic_bytes / 4)
        }
    }
}

/// Ops RLX does not launch a kernel for.
pub fn is_metadata_op(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Input { .. }
            | OpKind::Param { .. }
            | OpKind::Constant { .. }
            | OpKind::Reshape { .. }
            | OpKind::Transpose { .. }
            | OpKind::Narrow { .. }
    )
}

/// Ops RLX runs on the host, each costing a device round trip.
pub fn is_host_sync_op(kind: &OpKind) -> bool {
    matches!(kind, OpKind::LogMel | OpKind::LogMelBackward | OpKind::Custom { .. } | OpKind::WelchPeaks { .. })
}

/// RLX's tensor size: 0 for shapes with dynamic dims (unknown at compile time).
pub fn tensor_bytes(ty: &TensorType) -> u64 {
    ty.byte_size().unwrap_or(0)
}

/// What the profile assumes beyond RLX's own rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProfileRules {
    /// Count the bytes of outputs that are views (RLX counts none: it
    /// launches no kernel for them, but they are still read back).
    pub count_view_outputs: bool,
}

impl IoProfile {
    /// Whether a byte count reached u64's limit: the sums saturate rather
    /// than wrap, and a saturated profile cannot price anything.
    pub fn saturated(&self) -> bool {
        self.host_output_bytes == u64::MAX || self.device_traffic_bytes == u64::MAX
    }

    pub fn plus(self, o: IoProfile) -> IoProfile {
        IoProfile {
            kernel_launches: self.kernel_launches + o.kernel_launches,
            sync_points: self.sync_points + o.sync_points,
            host_output_bytes: self.host_output_bytes.saturating_add(o.host_output_bytes),
            device_traffic_bytes: self.device_traffic_bytes.saturating_add(o.device_traffic_bytes),
        }
    }

    pub fn minus(self, o: IoProfile) -> IoProfile {
        IoProfile {
            kernel_launches: self.kernel_launches.saturating_sub(o.kernel_launches),
            sync_points: self.sync_points.saturating_sub(o.sync_points),
            host_output_bytes: self.host_output_bytes.saturating_sub(o.host_output_bytes),
            device_traffic_bytes: self.device_traffic_bytes.saturating_sub(o.device_traffic_bytes),
        }
    }
}

/// One node's share of the profile; `is_output` when the graph returns it.
pub fn node_profile(graph: &Graph, id: NodeId, is_output: bool, rules: ProfileRules) -> IoProfile {
    let node = graph.node(id);
    let operands = node.operands.iter().map(|o| &graph.node(*o).ty);
    op_profile(&node.op, operands, &node.ty, is_output, rules)
}

/// The share of an op with these operand and result types, in the graph or
/// only planned.
pub fn op_profile<'a>(
    op: &Op,
    operands: impl IntoIterator<Item = &'a TensorType>,
    result: &TensorType,
    is_output: bool,
    rules: ProfileRules,
) -> IoProfile {
    let kind = op.kind();
    let mut p = IoProfile::default();
    if is_metadata_op(kind) {
        if is_output && rules.count_view_outputs && !matches!(kind, OpKind::Input { .. } | OpKind::Param { .. }) {
            p.host_output_bytes = tensor_bytes(result);
        }
        return p;
    }
    p.kernel_launches = 1;
    let mut operands = operands.into_iter().peekable();
    let first = operands.peek().copied();
    let operand_bytes = operands.fold(0u64, |acc, ty| acc.saturating_add(tensor_bytes(ty)));
    p.device_traffic_bytes = operand_bytes.saturating_add(tensor_bytes(result));
    if is_host_sync_op(kind) && !runs_natively(op, first) {
        p.sync_points = 1;
    }
    if is_output {
        p.host_output_bytes = tensor_bytes(result);
    }
    p
}

/// A fused op whose recorded lowering is a native kernel that the lowering
/// plan confirms for this operand: no host thunk. An op recorded as native
/// that no kernel takes (edited, or past a kernel's limits) is priced as the
/// host call it would run as.
fn runs_natively(op: &Op, input: Option<&TensorType>) -> bool {
    let Some(input) = input else { return false };
    if let Some(Ok(attrs)) = op.log_mel() {
        return attrs.lowering.and_then(super::plan::target_of).is_some_and(|target| super::plan::log_mel_lowering(attrs, input, target).is_ok());
    }
    let Some(Ok(attrs)) = op.welch_peaks() else { return false };
    attrs.lowering.and_then(super::plan::target_of).is_some_and(|target| super::plan::lowering_for(attrs, input, target).is_ok())
}

/// A custom op made by one of rlx-opt's own passes.
pub fn is_fused_op(kind: &OpKind) -> bool {
    matches!(kind, OpKind::Custom { name, .. } if name.starts_with(crate::fused::NAMESPACE))
}

/// The profile of `graph` with its own outputs, by RLX's rules.
///
/// Like RLX: an output that is a metadata op (an Input returned as is, a
/// Narrow view) counts no readback bytes, and an output listed twice counts once.
pub fn profile(graph: &Graph) -> IoProfile {
    profile_with(graph, ProfileRules::default())
}

pub fn profile_with(graph: &Graph, rules: ProfileRules) -> IoProfile {
    let mut is_output = vec![false; graph.len()];
    for id in &graph.outputs {
        is_output[id.index()] = true;
    }
    graph.ids().fold(IoProfile::default(), |p, id| p.plus(node_profile(graph, id, is_output[id.index()], rules)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::rlx_text;

    #[test]
    fn profiles_rlx_welch_graph() {
        let g = rlx_text::parse(
            "graph @w {\n  %0 = {\"Input\":{\"name\":\"segs\"}} : [2048, 256] f32\n  %1 = {\"Binary\":\"Sub\"}(%0, %0) : [2048, 256] f32\n  %2 = {\"Concat\":{\"axis\":1}}(%0, %1) : [2048, 512] f32\n  %3 = {\"Fft\":{\"inverse\":false,\"norm\":\"Backward\",\"algo\":\"Native\"}}(%2) : [2048, 512] f32\n  %4 = {\"WelchPeaks\":{\"k\":16,\"n_segments\":8}}(%3) : [256, 32] f32\n  return %3, %4\n}\n",
        )
        .unwrap();
        let p = profile(&g);
        let plane = 2048 * 256 * 4;
        assert_eq!(p.kernel_launches, 4);
        assert_eq!(p.sync_points, 1);
        assert_eq!(p.host_output_bytes, 2 * plane + 256 * 32 * 4);
        // Sub: 2 in + 1 out planes; Concat: 2 + 2; Fft: 2 + 2; WelchPeaks: 2 + peaks.
        assert_eq!(p.device_traffic_bytes, 3 * plane + 4 * plane + 4 * plane + 2 * plane + 256 * 32 * 4);
        assert_eq!(p.host_readback_bytes(true), p.host_output_bytes);
        assert_eq!(p.host_readback_bytes(false), p.host_output_bytes + p.device_traffic_bytes / 4);
    }
}
