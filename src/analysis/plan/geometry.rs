//! The geometry of a GPU kernel for one concrete input shape.

use super::{DeviceLimits, MAX_INDEXED_VALUES, SplitBounds, Unsupported};
use crate::fused::{InputLayout, PlanName, WelchPeaksAttrs};
use serde::Serialize;

/// How a GPU kernel passes over the FFT: in one kernel, or one launch per stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FftPasses {
    /// One kernel: the FFT in workgroup memory.
    OnePass,
    /// `load`, one `stage` per radix-2 stage, then `peaks_of`, through a
    /// global spectrum buffer (for FFTs longer than workgroup memory holds).
    MultiPass,
}

/// The geometry of a GPU kernel for one input shape: every length a launch
/// binds is fixed here, and runtimes check their buffers against it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelGeometry {
    /// The named plan this geometry runs (as [`Plan::name`](super::Plan::name)).
    pub plan: PlanName,
    pub fft: FftPasses,
    pub threads: u32,
    /// Workgroups/blocks of the one-pass and `peaks_of` kernels: one per batch entry.
    pub groups: u64,
    pub shared_bytes: u64,
    /// WGSL one-pass kernels: the FFT's stage twiddles come from a table in
    /// workgroup memory (counted in `shared_bytes`), not computed per
    /// butterfly ([`wgsl_twiddle_table`](super::wgsl_twiddle_table)).
    pub twiddle_table: bool,
    /// f32 values of each binding.
    pub input_len: u64,
    /// 1 when the op has no window (a dummy binding of one value).
    pub window_len: u64,
    pub output_len: u64,
    /// Complex values of the multi-pass plan's spectrum buffer (0 for one pass).
    pub spectra_len: u64,
    /// ⌊log2 n_fft⌋: the multi-pass plan's radix-2 stages (that plan takes
    /// power-of-two lengths only; the one-pass kernels' FFT is mixed-radix).
    pub log2n: u32,
    /// Split plans: chunks of segment pairs per batch entry (1 otherwise),
    /// the pairs of each chunk (the last may have fewer), and the f32
    /// values of the partial power spectra (batch × chunks × bins; 0 otherwise).
    pub chunks: u64,
    pub pairs_per_chunk: u64,
    pub partials_len: u64,
    /// Values between batch entries and between segments of one entry.
    pub batch_stride: u64,
    pub segment_stride: u64,
}

/// The kernel form [`plan`](super::plan) chose for an op, before an input
/// shape sizes it.
pub(super) struct Form {
    pub name: PlanName,
    pub fft: FftPasses,
    pub split: bool,
    pub multipass: bool,
    pub threads: u32,
    pub shared_bytes: u64,
    pub twiddle_table: bool,
}

/// The geometry of `form` on an input of static `shape` and `batch` dims:
/// every length a launch binds, checked against the 32-bit index range and
/// the device's binding limit. A split into one chunk per entry is the
/// batch form (`KernelGeometry::plan` says which runs).
pub(super) fn kernel_plan(attrs: &WelchPeaksAttrs, shape: &[u64], batch: &[u64], form: Form, bounds: &SplitBounds, limits: &DeviceLimits) -> Result<KernelGeometry, Unsupported> {
    let Form { name, fft, split, multipass, threads, shared_bytes, twiddle_table } = form;
    let n = attrs.n_fft;
    let pairs = attrs.segments.div_ceil(2);
    let too_many = |what| Unsupported::IndexRange { what, values: u64::MAX };
    let batch: u64 = batch.iter().try_fold(1u64, |p, d| p.checked_mul(*d)).ok_or(too_many("the batch"))?;
    let input_len = shape.iter().try_fold(1u64, |p, d| p.checked_mul(*d)).ok_or(too_many("the input"))?;
    let spectra_len = match fft {
        FftPasses::OnePass => 0,
        FftPasses::MultiPass => batch.checked_mul(pairs).and_then(|v| v.checked_mul(n)).ok_or(too_many("the spectra"))?,
    };
    let output_len = batch.checked_mul(2 * attrs.k).ok_or(too_many("the output"))?;
    let (chunks, pairs_per_chunk) = match split {
        true => bounds.cut(batch, pairs, limits.parallelism)?,
        false => (1, pairs),
    };
    // One chunk per entry is the batch form, with one pass fewer.
    let (split, name) = if split && chunks == 1 { (false, PlanName::with(false, multipass)) } else { (split, name) };
    let partials_len = match split {
        true => batch.checked_mul(chunks).and_then(|v| v.checked_mul(attrs.bins())).ok_or(too_many("the partial spectra"))?,
        false => 0,
    };
    let frame_len = attrs.frame_len;
    let (batch_stride, segment_stride) = match attrs.input_layout {
        InputLayout::Rows => (attrs.segments.checked_mul(frame_len).ok_or(too_many("a batch entry"))?, frame_len),
        InputLayout::Frames => (frame_len, batch.checked_mul(frame_len).ok_or(too_many("a frame"))?),
        InputLayout::Signal => (*shape.last().unwrap_or(&0), attrs.hop.unwrap_or(0)),
    };
    // One segment has no second one to step to: its stride is never used,
    // and a huge unused hop (2^63, which the CPU runs) must not make the
    // stride check below refuse the op. The kernels only read segment s + 1
    // when s + 1 < SEGMENTS.
    let segment_stride = if attrs.segments == 1 { 0 } else { segment_stride };
    let window_len = if attrs.window { frame_len } else { 1 };
    for (what, values, bytes_per_value) in
        [("the input", input_len, 4), ("the window", window_len, 4), ("the output", output_len, 4), ("the spectra", spectra_len, 8), ("the partial spectra", partials_len, 4)]
    {
        if values > MAX_INDEXED_VALUES {
            return Err(Unsupported::IndexRange { what, values });
        }
        let bytes = values * bytes_per_value;
        if bytes > limits.max_binding_bytes {
            return Err(Unsupported::Binding { what, bytes, limit: limits.max_binding_bytes });
        }
    }
    if batch_stride.max(segment_stride) > MAX_INDEXED_VALUES {
        return Err(Unsupported::IndexRange { what: "a stride", values: batch_stride.max(segment_stride) });
    }
    Ok(KernelGeometry {
        plan: name,
        fft,
        threads,
        groups: batch,
        shared_bytes,
        twiddle_table,
        input_len,
        window_len,
        output_len,
        spectra_len,
        log2n: n.ilog2(),
        chunks,
        pairs_per_chunk,
        partials_len,
        batch_stride,
        segment_stride,
    })
}
