//! What a chain form matches into ([`MatchedChain`]), the pattern that
//! matches it, and the matching helpers both forms share.

use super::Fuser;
use crate::analysis::picker::{Pick, pick};
use crate::analysis::plan::{DeviceLimits, lowering_for};
use crate::fused::{ChainForm, Lowering, WelchPeaksAttrs};
use crate::ir::{Dim, NodeId, OpCode, OpKind};
use crate::matcher::MatchResult;
use crate::rewrite::{Pattern, Rewriter};

/// One chain form: where it is rooted and how it is matched into a [`MatchedChain`];
/// pricing and rewriting are shared.
pub struct ChainPattern {
    pub(super) name: &'static str,
    pub(super) root_op: OpCode,
    pub(super) form: ChainForm,
    pub(super) match_chain: fn(&Rewriter<'_>, NodeId) -> MatchResult<MatchedChain>,
}

impl Pattern<Fuser> for ChainPattern {
    fn name(&self) -> &'static str {
        self.name
    }

    fn root_op(&self) -> OpCode {
        self.root_op
    }

    fn match_and_rewrite(&self, root: NodeId, rw: &mut Rewriter<'_>, fuser: &mut Fuser) -> bool {
        match (self.match_chain)(rw, root) {
            Ok(mut chain) => {
                let input = &rw.node(chain.input).ty;
                // Where no kernel takes the op, it is priced and recorded as the host call it runs as.
                let native = if fuser.native_kernels { lowering_for(&chain.attrs, input, fuser.target).ok() } else { None };
                chain.attrs.lowering = Some(native.unwrap_or(Lowering::Host));
                // A native kernel runs the plan the picker names; a host call has none.
                if native.is_some() {
                    let limits = DeviceLimits::assumed(fuser.target);
                    if let Ok(picked) = pick(&chain.attrs, input, fuser.target, &limits, fuser.force_plan) {
                        chain.attrs.plan = Some(picked.plan);
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
    pub form: ChainForm,
    pub root: NodeId,
    /// Every node of the chain, root first.
    pub matched: Vec<NodeId>,
    pub attrs: WelchPeaksAttrs,
    /// Operand 0 of the fused op.
    pub input: NodeId,
    /// The window constant, when there is one.
    pub window: Option<NodeId>,
    pub batch: Vec<Dim>,
    /// Nodes to replace: by the fused node itself (`None`), or by a view of
    /// its last axis (`Some((start, len))`).
    pub replacements: Vec<(NodeId, Option<(u64, u64)>)>,
    /// The FFT, whose result may also be a graph output.
    pub spectrum: NodeId,
    /// The plan picked for the fused op, and why (none for a host call).
    pub pick: Option<Pick>,
}

/// Power factor an FFT norm puts on |X|² of a forward transform, relative to
/// the unnormalized one. RLX scales forward transforms only under `Ortho`
/// (by 1/√n; its `Forward` norm scales the inverse), so power scales by 1/n.
pub fn power_scale(norm: crate::ir::FftNorm, n_fft: u64) -> f64 {
    match norm {
        crate::ir::FftNorm::Backward | crate::ir::FftNorm::Forward => 1.0,
        crate::ir::FftNorm::Ortho => 1.0 / n_fft as f64,
    }
}

/// The norm of a matched forward FFT.
pub fn fft_norm(fft: &crate::matcher::At<'_>) -> crate::matcher::MatchResult<crate::ir::FftNorm> {
    match *fft.kind() {
        OpKind::Fft { norm, .. } => Ok(norm),
        _ => Err(fft.miss(format!("%{} is not an FFT", fft.node().label))),
    }
}

/// `at` is provably a zero imaginary plane for the real plane `real`:
/// `Sub(real, real)` or a constant of zero bytes.
pub fn zero_plane(at: crate::matcher::At<'_>, real: NodeId) -> crate::matcher::MatchResult<()> {
    let zero = match at.kind() {
        OpKind::Binary(op) if op == "Sub" => at.node().operands.iter().all(|o| *o == real),
        OpKind::Constant { data } => data.iter().all(|b| *b == 0),
        _ => false,
    };
    if zero {
        Ok(())
    } else {
        Err(at.miss(format!("the imaginary plane %{} is not zero (`Sub(x, x)` or a zero constant)", at.node().label)))
    }
}
