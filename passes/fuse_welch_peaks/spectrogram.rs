//! The chain RLX users build from primitives, as rlx-ir's
//! `Graph::spectrogram(x, frame, hop, window, power=true, log=false)` emits it,
//! followed by a mean over frames, `TopK` and `GatherElements`:
//!
//! ```text
//! frames  = Concat{axis 0}(Reshape(Narrow(x, i·hop, frame)) for each frame)   or given
//! windowed = Mul(frames, window constant)                                      optional
//! real    = Concat{last}(windowed, zero constant)                              optional padding
//! spec    = Fft(Concat{last}(real, zero))
//! power   = Add(Mul(re, re), Mul(im, im)),  re/im = Narrow views of spec's one-sided bins
//! mean    = Reduce{Mean, axes [0]}(power);  idx = TopK{k}(mean);  val = GatherElements{last}(mean, idx)
//! ```
//! The fused op reads the signal (or the frames) and writes `[batch…, 2k]`,
//! bins then powers; `idx` and `val` become Narrow views of it.

use super::{ChainPattern, MatchedChain, form_name, fft_norm, power_scale};
use crate::passes::fusion::spectral_front::{framing_of, window_of, zero_padded_frames};
use crate::fused::{ChainForm, Doubling, FusedAttrs, InputLayout, OutputLayout, WelchPeaksAttrs};
use crate::ir::{FftNorm, Graph, NodeId, OpCode, OpKind, ReduceOp};
use crate::matcher::{At, MatchResult};
use crate::rewrite::Rewriter;

pub const PATTERN: ChainPattern = ChainPattern { name: "spectrogram-mean-topk", root_op: OpCode::TopK, form: form_name(ChainForm::SpectrogramTopk), match_chain };

fn match_chain(rw: &Rewriter<'_>, root: NodeId) -> MatchResult<MatchedChain> {
    let g = rw.graph();
    let (topk, k) = At::new(g, root).op_with(OpCode::TopK, |op| match *op {
        OpKind::TopK { k } => Some(k),
        _ => None,
    })?;
    let mean = topk
        .operand(0)?
        .op(OpCode::Reduce)?
        .attr("not a mean", |k| matches!(k, OpKind::Reduce { op: ReduceOp::Mean, .. }))?
        .attr("the mean is not over the frame axis 0 alone (keep_dim false)", |k| {
            matches!(k, OpKind::Reduce { axes, keep_dim: false, .. } if axes == &[0])
        })?;
    let mut matched = vec![root];
    let gather = values_of(rw, topk, mean.id);
    matched.extend(gather);
    matched.push(mean.id);
    let (fft, norm, n_fft) = spectrum_of(g, mean, &mut matched)?;
    let rank = fft.ty().rank();
    let (windowed, inf_is_nan) = zero_padded_frames(fft, &mut matched)?;
    let frame_len = windowed.ty().last().and_then(|d| d.as_static()).ok_or_else(|| windowed.miss("the frame length is not static"))?;
    let (frames, window) = window_of(windowed, frame_len, &mut matched)?;
    let segments = frames.ty().dims.first().and_then(|d| d.as_static()).ok_or_else(|| frames.miss("the frame count is not static"))?;
    let batch = mean.ty().dims[..mean.ty().rank() - 1].to_vec();
    if frames.ty().rank() != rank || frames.ty().dims[1..rank - 1] != batch[..] {
        return Err(frames.miss(format!("frames {} do not line up with the mean {}", frames.ty(), mean.ty())));
    }

    let (input, input_layout, hop) = match framing_of(frames, segments, frame_len) {
        Some((signal, hop, nodes)) => {
            matched.extend(nodes);
            (signal, InputLayout::Signal, Some(hop))
        }
        None => (frames.id, InputLayout::Frames, None),
    };
    let mut replacements = vec![(root, Some((0, k)))];
    replacements.extend(gather.map(|g| (g, Some((k, k)))));
    Ok(MatchedChain {
        form: form_name(ChainForm::SpectrogramTopk),
        root,
        matched,
        attrs: FusedAttrs::WelchPeaks(WelchPeaksAttrs {
            form: ChainForm::SpectrogramTopk,
            input_layout,
            n_fft,
            frame_len,
            hop,
            segments,
            k,
            window: window.is_some(),
            power_scale: power_scale(norm, n_fft),
            inf_is_nan,
            doubling: Doubling::None,
            output_layout: OutputLayout::Planar,
            lowering: None,
            plan: None,
        }),
        input,
        filters: None,
        window,
        batch,
        replacements,
        spectrum: fft.id,
        pick: None,
        lowering_note: None,
    })
}

/// The forward FFT whose one-sided power `mean` averages, `Add(Mul(re, re),
/// Mul(im, im))` of views of its real and imaginary planes: the FFT, its
/// norm, and n_fft.
fn spectrum_of<'g>(g: &'g Graph, mean: At<'g>, matched: &mut Vec<NodeId>) -> MatchResult<(At<'g>, FftNorm, u64)> {
    // power = Add(Mul(a, a), Mul(b, b)), one square per plane.
    let power = mean.operand(0)?.op(OpCode::Binary)?.attr("the power is not an `Add` of squares", |k| matches!(k, OpKind::Binary(b) if b == "Add"))?;
    matched.push(power.id);
    let mut planes = Vec::new();
    for i in 0..2 {
        let square = power.operand(i)?.op(OpCode::Binary)?.attr("not a square (`Mul(a, a)`)", |k| matches!(k, OpKind::Binary(b) if b == "Mul"))?;
        let a = square.operand(0)?;
        square.operand(1)?.same_as(a.id, "not a square: the two factors differ")?;
        matched.push(square.id);
        planes.push(view_of_spectrum(a, matched)?);
    }
    let (fft, _, _) = planes[0];
    if planes[1].0 != fft {
        return Err(power.miss("the two squared planes come from different FFTs"));
    }
    let fft = At::new(g, fft)
        .op(OpCode::Fft)?
        .attr("an inverse FFT; the chain needs the forward transform", |k| matches!(k, OpKind::Fft { inverse: false, .. }))?;
    let norm = fft_norm(&fft)?;
    let width = fft.ty().last().and_then(|d| d.as_static()).ok_or_else(|| fft.miss("the FFT width is not static"))?;
    let n_fft = width / 2;
    let bins = n_fft / 2 + 1;
    let mut starts: Vec<(u64, u64)> = planes.iter().map(|(_, start, len)| (*start, *len)).collect();
    starts.sort_unstable();
    if starts != [(0, bins), (n_fft, bins)] {
        return Err(power.miss(format!(
            "the squared views {starts:?} are not the {bins} one-sided bins of the real [0, {bins}) and imaginary [{n_fft}, {}) planes",
            n_fft + bins
        )));
    }
    matched.push(fft.id);
    Ok((fft, norm, n_fft))
}

/// A `GatherElements{last}(mean, topk)` that reads the values of the peaks.
fn values_of(rw: &Rewriter<'_>, topk: At<'_>, mean: NodeId) -> Option<NodeId> {
    let last = topk.ty().rank() as i64 - 1;
    rw.users(topk.id).iter().map(|(user, _)| *user).find(|user| {
        let node = rw.node(*user);
        matches!(node.op.kind(), OpKind::GatherElements { axis } if *axis as i64 == last || *axis == -1)
            && node.operands.as_slice() == [mean, topk.id]
    })
}

/// Follow Narrows along the last axis down to the node they view: returns
/// that node and the window `(start, len)` they select of it.
fn view_of_spectrum(at: At<'_>, matched: &mut Vec<NodeId>) -> MatchResult<(NodeId, u64, u64)> {
    let len = at.ty().last().and_then(|d| d.as_static()).ok_or_else(|| at.miss("the view width is not static"))?;
    let mut start = 0;
    let mut cur = at;
    while let OpKind::Narrow { axis, start: s, .. } = *cur.kind() {
        if axis as usize + 1 != cur.ty().rank() {
            return Err(cur.miss(format!("`Narrow` %{} is not along the last axis", cur.node().label)));
        }
        start = u64::checked_add(start, s).ok_or_else(|| cur.miss("the views' offsets overflow"))?;
        matched.push(cur.id);
        cur = cur.operand(0)?;
    }
    cur.op(OpCode::Fft)?;
    Ok((cur.id, start, len))
}
