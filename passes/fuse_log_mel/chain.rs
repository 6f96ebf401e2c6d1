//! The log-mel chain, rooted at RLX's `LogMel`:
//!
//! ```text
//! frames   = Concat{axis 0}(Reshape(Narrow(x, i·hop, frame)) for each frame)   or given
//! windowed = Mul(frames, window constant)                                      optional
//! real     = Concat{last}(windowed, zero constant)                             optional padding
//! spec     = Fft{forward}(Concat{last}(real, zero plane))
//! out      = LogMel(spec, filters)          filters [n_mels, n_fft/2 + 1], constant or input
//! ```
//! Never matched: an inverse FFT, a non-zero imaginary plane, filters whose
//! shape does not fit the spectrum. A spectrum (or any node of the chain)
//! another op or a graph output still needs stays, and is priced as kept.

use crate::fused::{FusedAttrs, LogMelAttrs, LogMelInput};
use crate::ir::{NodeId, OpCode, OpKind};
use crate::matcher::{At, MatchResult};
use crate::passes::fusion::spectral_front::{fft_norm, framing_of, power_scale, window_of, zero_padded_frames};
use crate::passes::fusion::{ChainPattern, MatchedChain};
use crate::rewrite::Rewriter;

/// The chain form's name in the fusion report.
pub const FORM: &str = "log_mel";

pub const PATTERN: ChainPattern = ChainPattern { name: "log-mel", root_op: OpCode::LogMel, form: FORM, match_chain };

fn match_chain(rw: &Rewriter<'_>, root: NodeId) -> MatchResult<MatchedChain> {
    let g = rw.graph();
    let log_mel = At::new(g, root).op(OpCode::LogMel)?.arity(2)?;
    let fft = log_mel
        .operand(0)?
        .op(OpCode::Fft)?
        .attr("an inverse FFT; the chain needs the forward transform", |k| matches!(k, OpKind::Fft { inverse: false, .. }))?;
    let norm = fft_norm(&fft)?;
    let width = fft.ty().last().and_then(|d| d.as_static()).ok_or_else(|| fft.miss("the spectrum's width is not static"))?;
    let n_fft = width / 2;
    let filters = log_mel.operand(1)?;
    let bins = n_fft / 2 + 1;
    let n_mels = match filters.ty().static_dims().as_deref() {
        Some([mels, b]) if *b == bins && *mels > 0 => *mels,
        Some([0, b]) if *b == bins => return Err(filters.miss(format!("the filters {} hold no mel band: the op needs at least one", filters.ty()))),
        _ => {
            return Err(filters.miss(format!("the filters {} do not fit an n_fft {n_fft} spectrum: [n_mels, {bins}] expected", filters.ty())));
        }
    };
    let mut matched = vec![root, fft.id];
    let (windowed, inf_is_nan) = zero_padded_frames(fft, &mut matched)?;
    let frame_len = windowed.ty().last().and_then(|d| d.as_static()).ok_or_else(|| windowed.miss("the frame length is not static"))?;
    let (frames, window) = window_of(windowed, frame_len, &mut matched)?;
    let lead = log_mel.ty().dims[..log_mel.ty().rank() - 1].to_vec();
    let framing = frames.ty().dims.first().and_then(|d| d.as_static()).and_then(|count| framing_of(frames, count, frame_len).map(|f| (count, f)));
    let mut attrs = LogMelAttrs { frame_len, window: window.is_some(), power_scale: power_scale(norm, n_fft), inf_is_nan, ..LogMelAttrs::frames(n_fft, n_mels) };
    let input = match framing {
        Some((count, (signal, hop, nodes))) => {
            matched.extend(nodes);
            attrs = LogMelAttrs { input_layout: LogMelInput::Signal, hop: Some(hop), frames: Some(count), ..attrs };
            signal
        }
        None => frames.id,
    };
    attrs.check().map_err(|e| log_mel.miss(format!("the fused op cannot hold this chain: {e}")))?;
    // The frames' leading dims are the result's: checked through the op's own definition.
    let fits = attrs.lead_of(&g.node(input).ty).is_ok_and(|l| crate::verify::dims_agree(&l, &lead));
    if !fits {
        return Err(frames.miss(format!("frames {} do not line up with the log-mel result {}", frames.ty(), log_mel.ty())));
    }
    Ok(MatchedChain {
        form: FORM,
        root,
        matched,
        attrs: FusedAttrs::LogMel(attrs),
        input,
        filters: Some(filters.id),
        window,
        batch: lead,
        replacements: vec![(root, None)],
        spectrum: fft.id,
        pick: None,
        lowering_note: None,
    })
}
