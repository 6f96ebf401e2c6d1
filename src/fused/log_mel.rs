//! The fused log-mel op: its attributes and its meaning, defined here and
//! nowhere else.
//!
//! It is written as RLX's user op
//! `{"Custom":{"name":"rlx_opt.log_mel","num_inputs":N,"attrs":[…]}}`, its
//! attributes UTF-8 JSON bytes ([`LogMelAttrs`]), so rlx-ir still loads a
//! rewritten graph.
//!
//! # Semantics
//! Operand 0 holds real frames (or a signal, by `input_layout`); operand 1
//! the mel filters `[n_mels, n_fft/2 + 1]`; operand 2, when `window` is set,
//! a window of `frame_len` values. For every frame:
//! 1. take its `frame_len` samples, multiply by the window, zero-pad to
//!    `n_fft`; with `inf_is_nan`, a sample that is then ±∞ counts as NaN
//!    ([`super::inf_as_nan`]);
//! 2. `X = FFT(frame)`, forward and unnormalized (any `n_fft`), computed as
//!    `2^e · FFT(2^−e · frame)` so that no sum overflows on the way
//!    ([`LogMelAttrs::transform_scale`]);
//! 3. power of bin `k` in `0..=n_fft/2`: `p[k] = |a·X[k]|²`, `a =
//!    √power_scale` (scaled, then squared, as RLX's norm scales the
//!    spectrum; one-sided, no doubling);
//! 4. `mel[m] = Σ_k p[k] · filters[m][k]`, summed in bin order over the span
//!    from the row's first to its last non-zero weight (RLX's
//!    `MelBands::from_dense`; zeros inside the span are kept);
//! 5. RLX's `compress_log_mel`: `v = log10(max(mel, 1e-10))`, floored at the
//!    frame's largest `v` − 8, then `(v + 4) / 4`.
//!
//! This is `LogMel(Fft(Concat(frames·window ‖ 0, imaginary 0)), filters)` as
//! rlx-ir 0.2.19 defines it (`rlx_ir::audio::log_mel_block_f32`): the floor
//! is per frame, not per clip.
//!
//! Input layouts: `frames` is `[lead…, frame_len]`, one frame per row, and
//! the result `[lead…, n_mels]`; `signal` is `[batch…, T]`, frame `s` being
//! samples `s·hop .. s·hop + frame_len` for `s` in `0..frames`, and the
//! result `[frames, batch…, n_mels]` (the frame axis first, as
//! `Graph::spectrogram` stacks its frames).

use super::{Lowering, is_false, is_one, one};
use crate::ir::{DType, Dim, TensorType};
use serde::{Deserialize, Serialize};

/// The custom op name of the fused log-mel op.
pub const LOG_MEL: &str = "rlx_opt.log_mel";

/// The log floor RLX applies before `log10` (`compress_log_mel`).
pub const LOG_FLOOR: f32 = 1e-10;

/// How far below a frame's largest log value its values are floored.
pub const DYNAMIC_RANGE: f32 = 8.0;

/// Where the frames come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogMelInput {
    /// `[lead…, frame_len]`: one frame per row.
    Frames,
    /// `[batch…, T]`: frames cut at `hop` steps (the framing of `Graph::spectrogram`).
    Signal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// A key the op does not know is refused, not ignored: the attributes are
// the op's meaning, and a key that would change it (a typo, a newer
// writer's) must not run as if it were absent.
#[serde(deny_unknown_fields)]
pub struct LogMelAttrs {
    pub input_layout: LogMelInput,
    /// FFT length, after zero padding; any length (mixed radix on GPUs).
    pub n_fft: u64,
    /// Samples per frame before padding (≤ n_fft).
    pub frame_len: u64,
    /// Samples between frame starts (`signal` layout only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop: Option<u64>,
    /// Frames cut from the signal (`signal` layout only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<u64>,
    pub n_mels: u64,
    /// Operand 2 is a `[frame_len]` window.
    #[serde(default, skip_serializing_if = "is_false")]
    pub window: bool,
    /// Factor the FFT's norm puts on power (1 for RLX's default `Backward`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub power_scale: f64,
    /// A windowed sample of ±∞ makes its frame's whole spectrum NaN, as the
    /// unfused chain's imaginary plane `Sub(x, x)` is NaN there (the pass
    /// sets it for that plane; a constant zero plane leaves ±∞ to the FFT's
    /// arithmetic).
    #[serde(default, skip_serializing_if = "is_false")]
    pub inf_is_nan: bool,
    /// The lowering the fusing pass chose for its target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowering: Option<Lowering>,
}

impl LogMelAttrs {
    /// RLX's native chain: `[F, n_fft]` frames, no window, Backward norm.
    pub fn frames(n_fft: u64, n_mels: u64) -> Self {
        LogMelAttrs {
            input_layout: LogMelInput::Frames,
            n_fft,
            frame_len: n_fft,
            hop: None,
            frames: None,
            n_mels,
            window: false,
            power_scale: 1.0,
            inf_is_nan: false,
            lowering: None,
        }
    }

    /// The power of two every log-mel kernel, and the op's definition,
    /// scales a frame's samples by before its FFT, `2^-e` with `e` =
    /// ⌈log2 n_fft⌉ + 4; [`kernel_amplitude`](Self::kernel_amplitude) undoes
    /// it before squaring. A power of two: in f32's normal range every
    /// power is the same bits as unscaled. But no FFT sum of loud samples
    /// overflows on the way: unscaled, two samples near f32's largest
    /// overflowed inside the transform, met as ∞ − ∞ = NaN, and the frame
    /// was −1.5 where the chain's power is +∞ (an adversarial run,
    /// 2026-11-29). Samples below about 2^e·1.2e-38 lose bits (subnormal):
    /// their power is far under the log's floor unless `power_scale` is
    /// itself beyond 1e40 or so.
    pub fn transform_scale(&self) -> f32 {
        f32::powi(2.0, -self.transform_exponent())
    }

    /// `√power_scale · 2^e`: the amplitude the kernels scale each bin of
    /// the scaled transform by before squaring (see
    /// [`transform_scale`](Self::transform_scale)).
    pub fn kernel_amplitude(&self) -> f32 {
        super::amplitude_scale(self.power_scale) * f32::powi(2.0, self.transform_exponent())
    }

    fn transform_exponent(&self) -> i32 {
        let bits = 64 - self.n_fft.saturating_sub(1).leading_zeros() as i32;
        bits + 4
    }

    /// One-sided bins, the filters' second dimension.
    pub fn bins(&self) -> u64 {
        self.n_fft / 2 + 1
    }

    pub fn num_inputs(&self) -> u32 {
        2 + self.window as u32
    }

    /// The bytes a custom op carries for these attributes (UTF-8 JSON); the
    /// op itself is [`Op::from_log_mel`](crate::ir::Op::from_log_mel).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("attributes serialise")
    }

    /// Attributes from the bytes a custom op carries (UTF-8 JSON), checked.
    pub fn from_bytes(bytes: &[u8]) -> Result<LogMelAttrs, LogMelAttrsError> {
        let attrs: LogMelAttrs = serde_json::from_slice(bytes).map_err(|e| LogMelAttrsError::Json(e.to_string()))?;
        attrs.check()?;
        Ok(attrs)
    }

    /// The attributes of a custom op named `name` carrying `attrs`, if it is
    /// the fused log-mel op. Ops parse them once when they are made: use
    /// [`Op::log_mel`](crate::ir::Op::log_mel).
    pub(crate) fn parse_custom(name: &str, attrs: &[u8]) -> Option<Result<LogMelAttrs, String>> {
        (name == LOG_MEL).then(|| serde_json::from_slice(attrs).map_err(|e| format!("bad `{LOG_MEL}` attributes: {e}")))
    }

    /// The filters' type, `[n_mels, n_fft/2 + 1]`.
    pub fn filters_type(&self) -> TensorType {
        TensorType::new(&[self.n_mels, self.bins()], DType::F32)
    }

    /// The leading dims of the result (everything but the mel axis) for
    /// operand 0 of this type, or why the operand does not fit.
    pub fn lead_of(&self, input: &TensorType) -> Result<Vec<Dim>, LogMelOperandError> {
        let last = input.last().and_then(|d| d.as_static());
        match self.input_layout {
            LogMelInput::Frames => {
                if input.rank() < 1 || last != Some(self.frame_len) {
                    return Err(LogMelOperandError::FramesShape { frame_len: self.frame_len, input: input.clone() });
                }
                Ok(input.dims[..input.rank() - 1].to_vec())
            }
            LogMelInput::Signal => {
                let (Some(hop), Some(frames)) = (self.hop, self.frames) else { return Err(LogMelOperandError::NoFraming) };
                let needed = self.signal_len(hop, frames).ok_or(LogMelOperandError::SignalSpan { frames, hop })?;
                if input.rank() < 1 || last.is_some_and(|t| t < needed) {
                    return Err(LogMelOperandError::SignalTooShort { needed, input: input.clone() });
                }
                let mut lead = vec![Dim::Static(frames)];
                lead.extend_from_slice(&input.dims[..input.rank() - 1]);
                Ok(lead)
            }
        }
    }

    /// The result type for these leading dims.
    pub fn result_type(&self, lead: &[Dim]) -> TensorType {
        let mut dims: smallvec::SmallVec<[Dim; 4]> = lead.into();
        dims.push(Dim::Static(self.n_mels));
        TensorType { dims, dtype: DType::F32 }
    }

    /// Samples the frames span in the signal layout, `(frames−1)·hop +
    /// frame_len`, or `None` when that overflows.
    pub fn signal_len(&self, hop: u64, frames: u64) -> Option<u64> {
        frames.checked_sub(1)?.checked_mul(hop)?.checked_add(self.frame_len)
    }

    /// Structural rules the attributes must keep.
    pub fn check(&self) -> Result<(), LogMelAttrsError> {
        if self.n_fft < 2 {
            return Err(LogMelAttrsError::FftTooShort { n_fft: self.n_fft });
        }
        if self.n_fft > crate::limits::MAX_CPU_N_FFT {
            return Err(LogMelAttrsError::FftTooLong { n_fft: self.n_fft });
        }
        if self.frame_len == 0 || self.frame_len > self.n_fft {
            return Err(LogMelAttrsError::FrameLen { frame_len: self.frame_len, n_fft: self.n_fft });
        }
        if self.n_mels == 0 {
            return Err(LogMelAttrsError::NoMels);
        }
        match self.input_layout {
            LogMelInput::Signal => {
                let (Some(hop), Some(frames)) = (self.hop.filter(|h| *h > 0), self.frames.filter(|f| *f > 0)) else {
                    return Err(LogMelAttrsError::NoFraming);
                };
                if self.signal_len(hop, frames).is_none() {
                    return Err(LogMelAttrsError::SignalOverflow { frames, hop });
                }
            }
            LogMelInput::Frames if self.hop.is_some() || self.frames.is_some() => return Err(LogMelAttrsError::FramingWithoutSignal),
            LogMelInput::Frames => {}
        }
        // The kernels scale each amplitude by √power_scale, in f32, times
        // the transform's scale undone (`kernel_amplitude`).
        if !self.power_scale.is_finite() || self.power_scale <= 0.0 || !super::amplitude_scale(self.power_scale).is_normal() {
            return Err(LogMelAttrsError::PowerScale(self.power_scale));
        }
        if !self.kernel_amplitude().is_normal() {
            return Err(LogMelAttrsError::PowerScaleForLength { power_scale: self.power_scale, n_fft: self.n_fft, exponent: self.transform_exponent() });
        }
        Ok(())
    }
}

/// Why bytes are not the log-mel op's attributes, or which of its
/// structural rules ([`LogMelAttrs::check`]) they break.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LogMelAttrsError {
    /// Not the attributes' JSON (serde_json's message).
    #[error("bad `{LOG_MEL}` attributes: {0}")]
    Json(String),
    #[error("n_fft {n_fft} is too short: a spectrum needs at least 2 points")]
    FftTooShort { n_fft: u64 },
    /// Every kernel, the CPU's included, plans FFTs up to this length.
    #[error("n_fft {n_fft} is longer than the fused op's kernels take (at most {})", crate::limits::MAX_CPU_N_FFT)]
    FftTooLong { n_fft: u64 },
    #[error("frame_len {frame_len} must be in 1..={n_fft} (n_fft)")]
    FrameLen { frame_len: u64, n_fft: u64 },
    #[error("n_mels must be at least 1")]
    NoMels,
    #[error("the signal layout needs a hop ≥ 1 and frames ≥ 1")]
    NoFraming,
    #[error("hop and frames belong to the signal layout only")]
    FramingWithoutSignal,
    #[error("{frames} frames {hop} samples apart overflow the signal length")]
    SignalOverflow { frames: u64, hop: u64 },
    #[error("power_scale {0:?} must be finite and above 0, its square root a normal f32")]
    PowerScale(f64),
    /// The kernels transform at 2^-exponent and scale each amplitude by
    /// √power_scale · 2^exponent ([`LogMelAttrs::kernel_amplitude`]).
    #[error("power_scale {power_scale:?} is too large at n_fft {n_fft}: the kernels' amplitude √power_scale · 2^{exponent} (undoing their transform's scale) must be a normal f32")]
    PowerScaleForLength { power_scale: f64, n_fft: u64, exponent: i32 },
}

/// Why an operand does not fit the op's attributes ([`LogMelAttrs::lead_of`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogMelOperandError {
    #[error("frames input must be [lead…, {frame_len}], got {input}")]
    FramesShape { frame_len: u64, input: TensorType },
    #[error("the signal layout needs a hop and a frame count")]
    NoFraming,
    #[error("{frames} frames {hop} samples apart span more than 2^64 samples")]
    SignalSpan { frames: u64, hop: u64 },
    #[error("signal input needs at least {needed} samples, got {input}")]
    SignalTooShort { needed: u64, input: TensorType },
    /// Boxed: two tensor types inline would make every result that can
    /// carry this error twice as large as its other variants need.
    #[error("filters must be {expected}, got {got}")]
    Filters { expected: Box<TensorType>, got: Box<TensorType> },
    #[error("window must be [{frame_len}], got {got}")]
    Window { frame_len: u64, got: TensorType },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_and_are_checked() {
        let attrs = LogMelAttrs::frames(400, 80);
        assert_eq!(LogMelAttrs::from_bytes(&attrs.to_bytes()).unwrap(), attrs);
        assert_eq!(attrs.bins(), 201);
        let no_mels = LogMelAttrs { n_mels: 0, ..attrs.clone() };
        assert_eq!(no_mels.check(), Err(LogMelAttrsError::NoMels));
        let framed = LogMelAttrs { hop: Some(160), ..attrs.clone() };
        assert_eq!(framed.check(), Err(LogMelAttrsError::FramingWithoutSignal));
        let signal = LogMelAttrs { input_layout: LogMelInput::Signal, hop: Some(160), frames: Some(u64::MAX), ..attrs.clone() };
        assert!(matches!(signal.check(), Err(LogMelAttrsError::SignalOverflow { .. })));
        assert!(matches!(LogMelAttrs::from_bytes(b"{"), Err(LogMelAttrsError::Json(_))));
        let tiny = LogMelAttrs { power_scale: 1e-300, ..attrs.clone() };
        assert!(matches!(tiny.check(), Err(LogMelAttrsError::PowerScale(_))));
        // √2e69 is a normal f32, but not times 2^13, n_fft 400's transform scale undone.
        let loud = LogMelAttrs { power_scale: 2e69, ..LogMelAttrs::frames(400, 80) };
        assert_eq!(loud.check().unwrap_err().to_string(), "power_scale 2e69 is too large at n_fft 400: the kernels' amplitude √power_scale · 2^13 (undoing their transform's scale) must be a normal f32");
        assert!(LogMelAttrs { power_scale: 2e60, ..loud }.check().is_ok());
        // Named as written, not as 300 decimal places.
        assert_eq!(tiny.check().unwrap_err().to_string(), "power_scale 1e-300 must be finite and above 0, its square root a normal f32");
        // Each mistake named for what it is: the FFT's length, the frame's.
        let one_point = LogMelAttrs { n_fft: 1, frame_len: 1, ..attrs.clone() };
        assert_eq!(one_point.check().unwrap_err().to_string(), "n_fft 1 is too short: a spectrum needs at least 2 points");
        let long_frame = LogMelAttrs { frame_len: 401, ..attrs.clone() };
        assert_eq!(long_frame.check().unwrap_err().to_string(), "frame_len 401 must be in 1..=400 (n_fft)");
        // A key the op does not know is refused.
        let mut extra: serde_json::Value = serde_json::from_slice(&attrs.to_bytes()).unwrap();
        extra["hop_length"] = 160.into();
        let e = LogMelAttrs::from_bytes(extra.to_string().as_bytes()).unwrap_err().to_string();
        assert!(e.contains("unknown field `hop_length`"), "{e}");
    }

    #[test]
    fn operands_give_the_leading_dims() {
        let attrs = LogMelAttrs::frames(400, 80);
        let ty = TensorType::new(&[2, 3000, 400], DType::F32);
        assert_eq!(attrs.lead_of(&ty).unwrap(), vec![Dim::Static(2), Dim::Static(3000)]);
        assert!(attrs.lead_of(&TensorType::new(&[3000, 512], DType::F32)).is_err());
        let signal = LogMelAttrs { input_layout: LogMelInput::Signal, hop: Some(160), frames: Some(10), ..attrs };
        assert_eq!(signal.lead_of(&TensorType::new(&[4, 1840], DType::F32)).unwrap(), vec![Dim::Static(10), Dim::Static(4)]);
        let e = signal.lead_of(&TensorType::new(&[4, 1839], DType::F32)).unwrap_err();
        assert!(e.to_string().contains("at least 1840 samples"), "{e}");
    }
}
