//! RLX's own chain: `WelchPeaks{k, S}(Fft(Concat([x, zero], last axis)))`,
//! the zero imaginary plane being `Sub(x, x)` or a zero constant.

use super::{ChainPattern, MatchedChain, form_name, fft_norm, power_scale, zero_plane};
use crate::fused::{ChainForm, FusedAttrs, WelchPeaksAttrs};
use crate::ir::{NodeId, OpCode, OpKind};
use crate::matcher::{At, MatchResult};
use crate::rewrite::Rewriter;

pub const PATTERN: ChainPattern = ChainPattern { name: "welch-peaks-native", root_op: OpCode::WelchPeaks, form: form_name(ChainForm::WelchPeaks), match_chain };

fn match_chain(rw: &Rewriter<'_>, root: NodeId) -> MatchResult<MatchedChain> {
    let g = rw.graph();
    let (peaks, (k, n_segments)) = At::new(g, root).op_with(OpCode::WelchPeaks, |op| match *op {
        OpKind::WelchPeaks { k, n_segments } => Some((k, n_segments)),
        _ => None,
    })?;
    let fft = peaks
        .operand(0)?
        .op(OpCode::Fft)?
        .attr("an inverse FFT; the chain needs the forward transform", |k| matches!(k, OpKind::Fft { inverse: false, .. }))?;
    let norm = fft_norm(&fft)?;
    let block = fft
        .operand(0)?
        .op(OpCode::Concat)?
        .arity(2)?
        .attr("not real and imaginary planes joined along the last axis", |k| matches!(k, OpKind::Concat { axis: 1 }))?;
    let real = block.operand(0)?;
    let imaginary = block.operand(1)?;
    let inf_is_nan = zero_plane(imaginary, real.id)?;
    let n_fft = real
        .shape("segments must be static [rows, n_fft]", |t| t.rank() == 2 && t.static_dims().is_some())?
        .ty()
        .dims[1]
        .as_static()
        .unwrap_or_default();
    Ok(MatchedChain {
        form: form_name(ChainForm::WelchPeaks),
        root,
        matched: vec![root, fft.id, block.id, imaginary.id],
        attrs: FusedAttrs::WelchPeaks(WelchPeaksAttrs { power_scale: power_scale(norm, n_fft), inf_is_nan, ..WelchPeaksAttrs::rlx(n_fft, n_segments, k) }),
        input: real.id,
        filters: None,
        window: None,
        batch: vec![peaks.ty().dims[0]],
        replacements: vec![(root, None)],
        spectrum: fft.id,
        pick: None,
        lowering_note: None,
    })
}
