//! The fused Welch-peaks op: its attributes and its meaning, defined here and
//! nowhere else.
//!
//! It is written as RLX's user op
//! `{"Custom":{"name":"rlx_opt.welch_peaks","num_inputs":N,"attrs":[…]}}`,
//! its attributes UTF-8 JSON bytes ([`WelchPeaksAttrs`]), so rlx-ir still loads
//! a rewritten graph.
//!
//! # Semantics
//! Operand 0 holds real segments; operand 1, when `window` is set, a window
//! of `frame_len` values. For every batch entry `b` (the leading dims of the
//! result) and segment `s` in `0..segments`:
//! 1. take the segment's `frame_len` samples (by `input_layout`, below),
//!    multiply by the window, zero-pad to `n_fft`; with `inf_is_nan`, a
//!    sample that is then ±∞ counts as NaN (see [`inf_as_nan`]);
//! 2. `X_s = FFT(segment)`, forward and unnormalized;
//! 3. power of bin `j` in `0..=n_fft/2`:
//!    `P[j] = (1/segments) · Σ_s c_j · |a·X_s[j]|²`, `a = √power_scale`
//!    (scaled, then squared, as RLX's norm scales the spectrum), where
//!    `c_j = 1` with `doubling = none`, and with `doubling = rlx` (RLX's
//!    WelchPeaks) `c_j = 1` for `j = 0` and `j = n_fft/2` (integer division),
//!    else 2; for odd `n_fft` RLX, unlike scipy, does not double the last bin,
//!    and neither does this op;
//! 4. the `k` bins of largest power, in descending power; equal powers go to
//!    the lower bin; NaN ranks above every number (as `torch.topk`), NaNs
//!    among themselves by bin; when `k` exceeds the `n_fft/2 + 1` bins, the
//!    surplus slots hold bin `-1` and power `-inf`.
//!
//! Input layouts: `rows` is `[B·S, frame_len]`, the S segments of a batch
//! entry in consecutive rows (RLX's WelchPeaks); `frames` is
//! `[S, batch…, frame_len]` (a spectrogram's frame axis first); `signal` is
//! `[batch…, T]`, segment `s` being samples `s·hop .. s·hop + frame_len`.
//!
//! Output layouts, last axis `2k`: `interleaved` is `(bin, power)` pairs
//! (RLX's WelchPeaks), `planar` is the k bins then the k powers (so the two
//! halves are contiguous views). Bins are written as f32.

pub mod log_mel;

pub use log_mel::{LOG_MEL, LogMelAttrs, LogMelAttrsError, LogMelInput, LogMelOperandError};

use crate::ir::{DType, Dim, TensorType};
use serde::{Deserialize, Serialize};

/// How a fused op runs on its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lowering {
    /// The native CPU kernel.
    Cpu,
    /// `kernels/welch_peaks.cu` through NVRTC.
    Cuda,
    /// `kernels/welch_peaks.wgsl` as SPIR-V, through wgpu/Vulkan.
    Spirv,
    /// `kernels/welch_peaks.wgsl` as Metal Shading Language.
    Msl,
    /// No native kernel: a custom op the runtime calls on the host.
    Host,
}

/// How a fused op's work is spread over a device: the `plan` attribute, set
/// by the pass's picker (or `force-plan=NAME`). See `analysis::plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanName {
    /// A worker (CPU thread, workgroup, block) per batch entry, the FFT in
    /// workgroup memory on GPUs.
    Batch,
    /// The segments of each entry spread over workers in chunks; partial
    /// power spectra summed per entry, then its top-k.
    Split,
    /// GPUs: the FFT through device memory, one dispatch per radix-2 stage
    /// over every segment; then a worker per batch entry.
    Multipass,
    /// GPUs: the multi-pass FFT, then the power spectra summed in chunks
    /// of segments, then per entry.
    SplitMultipass,
}

impl PlanName {
    pub const ALL: [PlanName; 4] = [PlanName::Batch, PlanName::Split, PlanName::Multipass, PlanName::SplitMultipass];

    pub fn name(self) -> &'static str {
        match self {
            PlanName::Batch => "batch",
            PlanName::Split => "split",
            PlanName::Multipass => "multipass",
            PlanName::SplitMultipass => "split-multipass",
        }
    }

    pub fn from_name(name: &str) -> Option<PlanName> {
        PlanName::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The segments of one entry are spread over workers.
    pub fn is_split(self) -> bool {
        matches!(self, PlanName::Split | PlanName::SplitMultipass)
    }

    /// The FFT runs through device memory.
    pub fn is_multipass(self) -> bool {
        matches!(self, PlanName::Multipass | PlanName::SplitMultipass)
    }

    /// The plan with this spreading and the given FFT form.
    pub fn with(split: bool, multipass: bool) -> PlanName {
        match (split, multipass) {
            (false, false) => PlanName::Batch,
            (true, false) => PlanName::Split,
            (false, true) => PlanName::Multipass,
            (true, true) => PlanName::SplitMultipass,
        }
    }
}

impl std::fmt::Display for PlanName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Prefix of the custom ops rlx-opt's passes create.
pub const NAMESPACE: &str = "rlx_opt.";

/// The custom op name of the fused op.
pub const WELCH_PEAKS: &str = "rlx_opt.welch_peaks";

/// The factor a fused op's FFT norm puts on each bin's amplitude,
/// √power_scale. Every kernel scales the transform by it before squaring,
/// in the unfused chain's order (RLX scales the spectrum, then squares it):
/// squaring first and scaling after overflowed f32 for loud frames whose
/// scaled power RLX computes finitely (at n_fft 400 under `Ortho`, frames
/// of amplitude 1e17 and up). 1 under RLX's default norm, where the kernels
/// compute exactly what they did.
pub fn amplitude_scale(power_scale: f64) -> f32 {
    power_scale.sqrt() as f32
}

/// A windowed sample as a fused op with `inf_is_nan` transforms it: ±∞ is
/// NaN, as in the unfused chain, whose imaginary plane `Sub(x, x)` is NaN
/// where x is ±∞ (and so, through the FFT, every bin of the segment or
/// frame). Every kernel loads its samples through this rule (the GPU
/// kernels' `inf_as_nan`, a bit test: shader compilers may fold `x − x`).
#[inline]
#[allow(clippy::eq_op)] // `v − v` is the point: 0 for finite v, NaN else.
pub fn inf_as_nan(inf_is_nan: bool, v: f32) -> f32 {
    // `v + (v − v)`: v itself for finite v (a −0.0 becomes +0.0, which no
    // power sees), NaN for ±∞ and NaN; two float ops, which vectorise
    // (rustc never folds `v − v`; shader compilers may, so the GPU kernels
    // test the bits instead).
    if inf_is_nan { v + (v - v) } else { v }
}

/// The unfused chain's imaginary plane at a windowed sample `v`, as the
/// references transform it: `v − v` for `Sub(x, x)` (`inf_is_nan`: 0, or
/// NaN where v is not finite), else a constant 0.
#[allow(clippy::eq_op)] // the unfused chain's `Sub(x, x)`, as it computes it.
pub fn imaginary_plane(inf_is_nan: bool, v: f32) -> f32 {
    if inf_is_nan { v - v } else { 0.0 }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainForm {
    /// RLX's `WelchPeaks` op on an FFT of zero-imaginary segments.
    WelchPeaks,
    /// `spectrogram(power)` → mean over frames → `TopK` (+ `GatherElements`).
    SpectrogramTopk,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputLayout {
    Rows,
    Frames,
    Signal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Doubling {
    Rlx,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputLayout {
    Interleaved,
    Planar,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// A key the op does not know is refused, not ignored: the attributes are
// the op's meaning, and a key that would change it (a typo, a newer
// writer's) must not run as if it were absent.
#[serde(deny_unknown_fields)]
pub struct WelchPeaksAttrs {
    pub form: ChainForm,
    pub input_layout: InputLayout,
    /// FFT length, after zero padding.
    pub n_fft: u64,
    /// Samples per segment before padding (≤ n_fft).
    pub frame_len: u64,
    /// Samples between segment starts (`signal` layout only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop: Option<u64>,
    pub segments: u64,
    pub k: u64,
    /// Operand 1 is a `[frame_len]` window.
    #[serde(default, skip_serializing_if = "is_false")]
    pub window: bool,
    /// Factor the FFT's norm puts on power (1 for RLX's default `Backward`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub power_scale: f64,
    /// A windowed sample of ±∞ makes its segment's whole spectrum NaN, as
    /// the unfused chain's imaginary plane `Sub(x, x)` is NaN there (the
    /// passes set it for that plane; a constant zero plane leaves ±∞ to the
    /// FFT's arithmetic).
    #[serde(default, skip_serializing_if = "is_false")]
    pub inf_is_nan: bool,
    pub doubling: Doubling,
    pub output_layout: OutputLayout,
    /// The lowering the fusing pass chose for its target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowering: Option<Lowering>,
    /// The plan the pass picked for its target; absent, runtimes take
    /// `batch` (`multipass` where the FFT does not fit workgroup memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanName>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

impl WelchPeaksAttrs {
    /// RLX's `WelchPeaks` semantics on `[B·S, n_fft]` segment rows.
    pub fn rlx(n_fft: u64, segments: u64, k: u64) -> Self {
        WelchPeaksAttrs {
            form: ChainForm::WelchPeaks,
            input_layout: InputLayout::Rows,
            n_fft,
            frame_len: n_fft,
            hop: None,
            segments,
            k,
            window: false,
            power_scale: 1.0,
            inf_is_nan: false,
            doubling: Doubling::Rlx,
            output_layout: OutputLayout::Interleaved,
            lowering: None,
            plan: None,
        }
    }

    pub fn bins(&self) -> u64 {
        self.n_fft / 2 + 1
    }

    pub fn num_inputs(&self) -> u32 {
        1 + self.window as u32
    }

    /// The bytes a custom op carries for these attributes (UTF-8 JSON); the
    /// op itself is [`Op::from_welch_peaks`](crate::ir::Op::from_welch_peaks)
    /// (the IR knows this module, not the other way round).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("attributes serialise")
    }

    /// Attributes from the bytes a custom op carries (UTF-8 JSON), checked.
    pub fn from_bytes(bytes: &[u8]) -> Result<WelchPeaksAttrs, AttrsError> {
        let attrs: WelchPeaksAttrs = serde_json::from_slice(bytes).map_err(|e| AttrsError::Json(e.to_string()))?;
        attrs.check()?;
        Ok(attrs)
    }

    /// The attributes of a custom op named `name` carrying `attrs`, if it is
    /// the fused op. Ops parse them once when they are made: use
    /// [`Op::welch_peaks`](crate::ir::Op::welch_peaks).
    pub(crate) fn parse_custom(name: &str, attrs: &[u8]) -> Option<Result<WelchPeaksAttrs, String>> {
        (name == WELCH_PEAKS).then(|| serde_json::from_slice(attrs).map_err(|e| format!("bad `{WELCH_PEAKS}` attributes: {e}")))
    }

    /// The result type for a batch of the given dims.
    pub fn result_type(&self, batch: &[Dim]) -> TensorType {
        let mut dims: smallvec::SmallVec<[Dim; 4]> = batch.into();
        dims.push(Dim::Static(self.k.saturating_mul(2)));
        TensorType { dims, dtype: DType::F32 }
    }

    /// The batch dims of operand 0 of this type, or why the operand does not fit.
    pub fn batch_of(&self, input: &TensorType) -> Result<Vec<Dim>, OperandError> {
        let last = input.last().and_then(|d| d.as_static());
        match self.input_layout {
            InputLayout::Rows => {
                if input.rank() != 2 || last != Some(self.frame_len) {
                    return Err(OperandError::RowsShape { frame_len: self.frame_len, input: input.clone() });
                }
                match input.dims[0] {
                    Dim::Static(r) if r % self.segments != 0 => Err(OperandError::RowsSplit { rows: r, segments: self.segments }),
                    Dim::Static(r) => Ok(vec![Dim::Static(r / self.segments)]),
                    d => Ok(vec![d]),
                }
            }
            InputLayout::Frames => {
                if input.rank() < 2 || last != Some(self.frame_len) || input.dims[0].as_static().is_some_and(|f| f != self.segments) {
                    return Err(OperandError::FramesShape { segments: self.segments, frame_len: self.frame_len, input: input.clone() });
                }
                Ok(input.dims[1..input.rank() - 1].to_vec())
            }
            InputLayout::Signal => {
                let hop = self.hop.ok_or(OperandError::NoHop)?;
                let needed = self.signal_len(hop).ok_or(OperandError::SignalSpan { segments: self.segments, hop })?;
                if input.rank() < 1 || last.is_some_and(|t| t < needed) {
                    return Err(OperandError::SignalTooShort { needed, input: input.clone() });
                }
                Ok(input.dims[..input.rank() - 1].to_vec())
            }
        }
    }

    /// Samples the segments span in the signal layout, `(segments−1)·hop +
    /// frame_len`, or `None` when that overflows.
    pub fn signal_len(&self, hop: u64) -> Option<u64> {
        self.segments.checked_sub(1)?.checked_mul(hop)?.checked_add(self.frame_len)
    }

    /// The static batch shape of an operand of shape `input`, or why it does not fit.
    pub fn batch_shape(&self, input: &[usize]) -> Result<Vec<usize>, OperandError> {
        let ty = TensorType::new(&input.iter().map(|d| *d as u64).collect::<Vec<_>>(), DType::F32);
        Ok(self.batch_of(&ty)?.iter().map(|d| d.as_static().unwrap_or(0) as usize).collect())
    }

    /// Structural rules the attributes must keep.
    pub fn check(&self) -> Result<(), AttrsError> {
        if self.n_fft == 0 || self.frame_len == 0 || self.frame_len > self.n_fft {
            return Err(AttrsError::FrameLen { frame_len: self.frame_len, n_fft: self.n_fft });
        }
        if self.n_fft > crate::limits::MAX_CPU_N_FFT {
            return Err(AttrsError::FftTooLong { n_fft: self.n_fft });
        }
        if self.segments == 0 || self.k == 0 {
            return Err(AttrsError::NoSegmentsOrPeaks);
        }
        if self.input_layout == InputLayout::Signal && self.hop.is_none_or(|h| h == 0) {
            return Err(AttrsError::NoHop);
        }
        // A hop elsewhere was taken and meant nothing (an adversarial run),
        // as log-mel's frames layout refuses one.
        if self.input_layout != InputLayout::Signal && self.hop.is_some() {
            return Err(AttrsError::HopWithoutSignal);
        }
        if self.input_layout == InputLayout::Signal && self.hop.and_then(|h| self.signal_len(h)).is_none() {
            return Err(AttrsError::SignalOverflow { segments: self.segments, hop: self.hop.unwrap_or(0) });
        }
        if self.k.checked_mul(2).is_none() || !self.power_scale.is_finite() || self.power_scale <= 0.0 {
            return Err(AttrsError::Unrepresentable { k: self.k, power_scale: self.power_scale });
        }
        // Every kernel scales each amplitude by √power_scale and weighs a
        // bin's power by 1 / segments, halved by the pair formula and doubled
        // by RLX's one-sided spectrum, in f32: each must be a normal, finite f32.
        let half = 1.0 / self.segments as f64 * 0.5;
        let factors = [amplitude_scale(self.power_scale), half as f32, (2.0 * half) as f32, (4.0 * half) as f32];
        if factors.iter().any(|w| !w.is_normal()) {
            return Err(AttrsError::WeightRange { power_scale: self.power_scale, segments: self.segments });
        }
        Ok(())
    }
}

/// Why bytes are not the fused op's attributes, or which of its structural
/// rules ([`WelchPeaksAttrs::check`]) the attributes break.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AttrsError {
    /// Not the attributes' JSON (serde_json's message).
    #[error("bad `{WELCH_PEAKS}` attributes: {0}")]
    Json(String),
    #[error("frame_len {frame_len} must be in 1..={n_fft} (n_fft)")]
    FrameLen { frame_len: u64, n_fft: u64 },
    /// Every kernel, the CPU's included, plans FFTs up to this length.
    #[error("n_fft {n_fft} is longer than the fused op's kernels take (at most {})", crate::limits::MAX_CPU_N_FFT)]
    FftTooLong { n_fft: u64 },
    #[error("segments and k must be at least 1")]
    NoSegmentsOrPeaks,
    #[error("the signal layout needs a hop ≥ 1")]
    NoHop,
    #[error("a hop is the signal layout's: the rows and frames layouts take none")]
    HopWithoutSignal,
    #[error("{segments} segments {hop} samples apart overflow the signal length")]
    SignalOverflow { segments: u64, hop: u64 },
    #[error("k {k} and power_scale {power_scale} must be representable (2k < 2^64, a finite scale > 0)")]
    Unrepresentable { k: u64, power_scale: f64 },
    /// The amplitude factor (√power_scale) or a bin's weight (1 / segments,
    /// halved or doubled) is not a normal f32.
    #[error("power_scale {power_scale:?} over {segments} segments gives an amplitude factor or per-bin weights outside f32's normal range")]
    WeightRange { power_scale: f64, segments: u64 },
}

/// Why an operand does not fit the op's attributes ([`WelchPeaksAttrs::batch_of`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperandError {
    #[error("rows input must be [B·S, {frame_len}], got {input}")]
    RowsShape { frame_len: u64, input: TensorType },
    #[error("{rows} rows do not split into {segments} segments")]
    RowsSplit { rows: u64, segments: u64 },
    #[error("frames input must be [{segments}, batch…, {frame_len}], got {input}")]
    FramesShape { segments: u64, frame_len: u64, input: TensorType },
    #[error("signal input needs a hop")]
    NoHop,
    #[error("{segments} segments {hop} samples apart span more than 2^64 samples")]
    SignalSpan { segments: u64, hop: u64 },
    #[error("signal input needs at least {needed} samples, got {input}")]
    SignalTooShort { needed: u64, input: TensorType },
}

/// Either fused op's attributes: what the fusing engine (`passes/fusion`)
/// matches, prices, reports and builds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FusedAttrs {
    WelchPeaks(WelchPeaksAttrs),
    LogMel(LogMelAttrs),
}

impl FusedAttrs {
    pub fn lowering(&self) -> Option<Lowering> {
        match self {
            FusedAttrs::WelchPeaks(a) => a.lowering,
            FusedAttrs::LogMel(a) => a.lowering,
        }
    }

    pub fn set_lowering(&mut self, lowering: Option<Lowering>) {
        match self {
            FusedAttrs::WelchPeaks(a) => a.lowering = lowering,
            FusedAttrs::LogMel(a) => a.lowering = lowering,
        }
    }

    /// The op's structural rules ([`WelchPeaksAttrs::check`],
    /// [`LogMelAttrs::check`]), broken or kept.
    pub fn check(&self) -> Result<(), String> {
        match self {
            FusedAttrs::WelchPeaks(a) => a.check().map_err(|e| e.to_string()),
            FusedAttrs::LogMel(a) => a.check().map_err(|e| e.to_string()),
        }
    }

    /// Samples per frame (segment) before padding: the window's length.
    pub fn frame_len(&self) -> u64 {
        match self {
            FusedAttrs::WelchPeaks(a) => a.frame_len,
            FusedAttrs::LogMel(a) => a.frame_len,
        }
    }

    /// The fused op's result type for these leading (batch) dims.
    pub fn result_type(&self, lead: &[Dim]) -> TensorType {
        match self {
            FusedAttrs::WelchPeaks(a) => a.result_type(lead),
            FusedAttrs::LogMel(a) => a.result_type(lead),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `inf_is_nan` makes ±∞ NaN and keeps every finite value (and NaN);
    /// without it, nothing changes. The references' plane is `x − x`.
    #[test]
    fn infinities_load_as_nan_under_inf_is_nan() {
        for v in [f32::INFINITY, f32::NEG_INFINITY] {
            assert!(inf_as_nan(true, v).is_nan() && imaginary_plane(true, v).is_nan(), "{v}");
            assert_eq!(inf_as_nan(false, v), v);
            assert_eq!(imaginary_plane(false, v), 0.0);
        }
        for v in [0.0, -0.0, 1.5, -3e38, f32::MAX, f32::MIN_POSITIVE, 1e-45] {
            assert_eq!(inf_as_nan(true, v), v, "{v}");
            assert_eq!(imaginary_plane(true, v), 0.0, "{v}");
        }
        assert!(inf_as_nan(true, f32::NAN).is_nan() && inf_as_nan(false, f32::NAN).is_nan());
    }

    #[test]
    fn scales_that_f32_cannot_weigh_are_refused() {
        // √ of each is past f32's range (1e154, 1e-90, 1e-150); √1e40 = 1e20 is not.
        for scale in [1e308, 1e-180, 1e-300] {
            let attrs = WelchPeaksAttrs { power_scale: scale, ..WelchPeaksAttrs::rlx(256, 8, 16) };
            let e = attrs.check().unwrap_err();
            assert!(matches!(e, AttrsError::WeightRange { segments: 8, .. }), "{scale}: {e}");
            assert!(e.to_string().contains("f32's normal range"), "{scale}");
        }
        assert!(WelchPeaksAttrs { power_scale: 1e40, ..WelchPeaksAttrs::rlx(256, 8, 16) }.check().is_ok());
    }

    #[test]
    fn operands_split_into_batch_entries() {
        let attrs = WelchPeaksAttrs::rlx(256, 8, 16);
        assert_eq!(attrs.batch_of(&TensorType::new(&[2048, 256], DType::F32)).unwrap(), vec![Dim::Static(256)]);
        let e = attrs.batch_of(&TensorType::new(&[2047, 256], DType::F32)).unwrap_err();
        assert_eq!(e, OperandError::RowsSplit { rows: 2047, segments: 8 });
        assert_eq!(e.to_string(), "2047 rows do not split into 8 segments");
        assert!(matches!(WelchPeaksAttrs::from_bytes(b"{"), Err(AttrsError::Json(_))));
    }

    /// A key the op does not know is refused, not run as if absent.
    #[test]
    fn unknown_attributes_are_refused() {
        let mut extra: serde_json::Value = serde_json::from_slice(&WelchPeaksAttrs::rlx(256, 8, 16).to_bytes()).unwrap();
        extra["detrend"] = "linear".into();
        let e = WelchPeaksAttrs::from_bytes(extra.to_string().as_bytes()).unwrap_err().to_string();
        assert!(e.contains("unknown field `detrend`"), "{e}");
    }
}
