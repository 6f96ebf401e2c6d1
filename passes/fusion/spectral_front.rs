//! The front of the spectral chains both fusing passes match: the frames an
//! FFT transforms (`Concat{last}(real, zero plane)`, the real plane
//! optionally zero-padded), a window multiplied into them, and rlx-ir's
//! `Graph::spectrogram` framing of a signal in front of them.

use crate::ir::{NodeId, OpCode, OpKind};
use crate::matcher::{At, MatchResult};

/// The real frames the FFT transforms: `Concat{last}(real, zero plane)`,
/// `real` optionally zero-padded up to the FFT length. Returns the frames
/// before padding (windowed or not), and whether the plane is `Sub(real,
/// real)` (NaN where a sample is ±∞: the fused op's `inf_is_nan`).
pub fn zero_padded_frames<'g>(fft: At<'g>, matched: &mut Vec<NodeId>) -> MatchResult<(At<'g>, bool)> {
    let last = fft.ty().rank() as u64 - 1;
    let block = fft
        .operand(0)?
        .op(OpCode::Concat)?
        .arity(2)?
        .attr("not real and imaginary planes joined along the last axis", |k| matches!(k, OpKind::Concat { axis } if *axis == last))?;
    let real = block.operand(0)?;
    let inf_is_nan = zero_plane(block.operand(1)?, real.id)?;
    matched.extend([block.id, block.operand(1)?.id]);

    // Optional zero padding up to the FFT length.
    let windowed = match real.kind() {
        OpKind::Concat { axis } if *axis == last && real.node().operands.len() == 2 => {
            let pad = real.operand(1)?;
            match pad.kind() {
                OpKind::Constant { .. } if is_zero_constant(&pad) => {
                    matched.extend([real.id, pad.id]);
                    real.operand(0)?
                }
                _ => return Err(pad.miss(format!("the padding %{} is not a zero constant", pad.node().label))),
            }
        }
        _ => real,
    };
    Ok((windowed, inf_is_nan))
}

/// The frames and the window constant of `windowed`: `Mul(frames, window)`
/// in either order, or `windowed` itself without a window.
pub fn window_of<'g>(windowed: At<'g>, frame_len: u64, matched: &mut Vec<NodeId>) -> MatchResult<(At<'g>, Option<NodeId>)> {
    Ok(match windowed.kind() {
        OpKind::Binary(b) if b == "Mul" => {
            let (x, y) = (windowed.operand(0)?, windowed.operand(1)?);
            let (frames, window) = match (x.kind(), y.kind()) {
                (_, OpKind::Constant { .. }) => (x, y),
                (OpKind::Constant { .. }, _) => (y, x),
                _ => return Err(windowed.miss(format!("the window of %{} is not a constant", windowed.node().label))),
            };
            let dims = window.ty().static_dims().unwrap_or_default();
            let lines_up = dims.last() == Some(&frame_len) && dims.iter().rev().skip(1).all(|d| *d == 1) && frames.ty() == windowed.ty();
            if !lines_up {
                return Err(window.miss(format!("the window {} does not line up with frames {}", window.ty(), frames.ty())));
            }
            matched.push(windowed.id);
            (frames, Some(window.id))
        }
        _ => (windowed, None),
    })
}

/// rlx-ir's framing: `Concat{axis 0}` of `Reshape([1, batch…, L])(Narrow(x, i·hop, L))`
/// for i in 0..segments, all of one signal `x`. Returns `x`, the hop and the
/// framing nodes.
pub fn framing_of(frames: At<'_>, segments: u64, frame_len: u64) -> Option<(NodeId, u64, Vec<NodeId>)> {
    if !matches!(frames.kind(), OpKind::Concat { axis: 0 }) || frames.node().operands.len() as u64 != segments {
        return None;
    }
    let mut nodes = vec![frames.id];
    let mut signal = None;
    let mut starts = Vec::new();
    for i in 0..segments as usize {
        let reshape = frames.operand(i).ok()?.op(OpCode::Reshape).ok()?;
        let narrow = reshape.operand(0).ok()?.op(OpCode::Narrow).ok()?;
        let OpKind::Narrow { axis, start, len } = *narrow.kind() else { return None };
        let x = narrow.operand(0).ok()?;
        let leading_one = reshape.ty().dims.first() == Some(&crate::ir::Dim::Static(1))
            && reshape.ty().dims[1..] == narrow.ty().dims[..];
        if axis as usize + 1 != x.ty().rank() || len != frame_len || !leading_one || *signal.get_or_insert(x.id) != x.id {
            return None;
        }
        starts.push(start);
        nodes.extend([reshape.id, narrow.id]);
    }
    // Frames concatenated in decreasing order (or overlapping the same start)
    // are no regular framing; products of attribute values are checked.
    let hop = if segments > 1 { starts[1].checked_sub(starts[0])? } else { frame_len };
    let regular = starts.iter().enumerate().all(|(i, s)| (i as u64).checked_mul(hop) == Some(*s));
    (regular && hop > 0).then(|| (signal.expect("at least one frame"), hop, nodes))
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

/// `at` is a constant of zeros: an f32 constant's zeros of either sign
/// (−0.0 is as much a zero as +0.0 in an imaginary plane or a padding: it
/// changes only the sign of zeros in the spectrum, never a power), other
/// dtypes' zero bytes.
fn is_zero_constant(at: &crate::matcher::At<'_>) -> bool {
    match at.kind() {
        OpKind::Constant { data } if at.node().ty.dtype == crate::ir::DType::F32 && data.len().is_multiple_of(4) => {
            data.chunks_exact(4).all(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]) & 0x7fff_ffff == 0)
        }
        OpKind::Constant { data } => data.iter().all(|b| *b == 0),
        _ => false,
    }
}

/// `at` is provably a zero imaginary plane for the real plane `real`:
/// `Sub(real, real)` or a constant of zeros ([`is_zero_constant`]). Returns
/// whether it is `Sub(real, real)`: zero only where `real` is finite, and
/// NaN where it is ±∞, which the fused ops reproduce with `inf_is_nan`.
pub fn zero_plane(at: crate::matcher::At<'_>, real: NodeId) -> crate::matcher::MatchResult<bool> {
    let (zero, sub) = match at.kind() {
        OpKind::Binary(op) if op == "Sub" => (at.node().operands.iter().all(|o| *o == real), true),
        _ => (is_zero_constant(&at), false),
    };
    if zero {
        Ok(sub)
    } else {
        Err(at.miss(format!("the imaginary plane %{} is not zero (`Sub(x, x)` or a zero constant)", at.node().label)))
    }
}
