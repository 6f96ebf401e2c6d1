//! What a chain form matches into ([`MatchedChain`]), and the pattern that
//! matches it: each fusing pass lists its forms as [`ChainPattern`]s.

use super::Fuser;
use crate::analysis::picker::{Pick, pick};
use crate::analysis::plan::{DeviceLimits, log_mel_lowering, lowering_for};
use crate::fused::{FusedAttrs, Lowering};
use crate::ir::{Dim, NodeId, OpCode};
use crate::matcher::{MatchResult, Miss};
use crate::rewrite::{Pattern, Rewriter};

/// One chain form: where it is rooted and how it is matched into a [`MatchedChain`];
/// pricing and rewriting are shared.
pub struct ChainPattern {
    pub name: &'static str,
    pub root_op: OpCode,
    /// The form's name in the fusion report ([`form_name`](super::form_name)).
    pub form: &'static str,
    pub match_chain: fn(&Rewriter<'_>, NodeId) -> MatchResult<MatchedChain>,
}

impl Pattern<Fuser> for ChainPattern {
    fn name(&self) -> &'static str {
        self.name
    }

    fn root_op(&self) -> OpCode {
        self.root_op
    }

    fn match_and_rewrite(&self, root: NodeId, rw: &mut Rewriter<'_>, fuser: &mut Fuser) -> bool {
        // A chain the fused op cannot hold (an FFT longer than its kernels
        // take, say) stays as it is: fused, it could not run.
        let matched = (self.match_chain)(rw, root).and_then(|chain| match chain.attrs.check() {
            Ok(()) => Ok(chain),
            Err(e) => Err(Miss { node: root, reason: format!("the fused op cannot hold this chain: {e}") }),
        });
        match matched {
            Ok(mut chain) => {
                let input = &rw.node(chain.input).ty;
                // Where no kernel takes the op, it is priced and recorded as the host call it runs as.
                let native = match &chain.attrs {
                    _ if !fuser.native_kernels => None,
                    FusedAttrs::WelchPeaks(attrs) => lowering_for(attrs, input, fuser.target).ok(),
                    FusedAttrs::LogMel(attrs) => log_mel_lowering(attrs, input, fuser.target).map_err(|e| chain.lowering_note = Some(e.to_string())).ok(),
                };
                chain.attrs.set_lowering(Some(native.unwrap_or(Lowering::Host)));
                // A native kernel runs the plan the picker names; a host call has none.
                if let (Some(_), FusedAttrs::WelchPeaks(attrs)) = (native, &mut chain.attrs) {
                    let limits = DeviceLimits::assumed(fuser.target);
                    if let Ok(picked) = pick(attrs, input, fuser.target, &limits, fuser.force_plan) {
                        attrs.plan = Some(picked.plan);
                        chain.pick = Some(picked);
                    }
                }
                fuser.decide(rw, chain)
            }
            Err(miss) => {
                fuser.near_miss(rw, self.form, root, miss);
                false
            }
        }
    }
}

/// A matched chain and the rewrite that fuses it.
pub struct MatchedChain {
    /// The form's name in the fusion report.
    pub form: &'static str,
    pub root: NodeId,
    /// Every node of the chain, root first.
    pub matched: Vec<NodeId>,
    pub attrs: FusedAttrs,
    /// Operand 0 of the fused op.
    pub input: NodeId,
    /// The log-mel op's filters (operand 1).
    pub filters: Option<NodeId>,
    /// The window constant, when there is one.
    pub window: Option<NodeId>,
    /// The result's leading dims (the batch, or the frames).
    pub batch: Vec<Dim>,
    /// Nodes to replace: by the fused node itself (`None`), or by a view of
    /// its last axis (`Some((start, len))`).
    pub replacements: Vec<(NodeId, Option<(u64, u64)>)>,
    /// The FFT, whose result may also be a graph output.
    pub spectrum: NodeId,
    /// The plan picked for the fused op, and why (none for a host call).
    pub pick: Option<Pick>,
    /// Why no native kernel takes the op, when none does (for the report).
    pub lowering_note: Option<String>,
}
