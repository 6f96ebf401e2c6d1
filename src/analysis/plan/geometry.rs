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
    /// CUDA's radix-2 multi-pass FFT: `load`, one `stage` per radix-2
    /// stage, then `peaks_of`, through a global spectrum buffer (for FFTs
    /// longer than workgroup memory holds; power-of-two lengths). CUDA takes
    /// it only with the four-step FFT off (`RLX_OPT_CUDA_FOUR_STEP=0`).
    MultiPass,
    /// The multi-pass FFT in four steps (WGSL's, and CUDA's by default;
    /// `kernels/welch_peaks_four_step.wgsl` and `.cu`): the n_fft = `n1`·`n2`
    /// samples of a pair as an n1 × n2 matrix, `columns` runs its n2
    /// column FFTs (n1 points each, in workgroup memory) and twiddles them,
    /// `rows` its n1 row FFTs (n2 points) in place, then `peaks_of` reads
    /// bin k at row k mod n1, column k / n1. Two passes through device
    /// memory whatever the length, where radix-2 stages take log2 n_fft;
    /// any length of 2s, 3s and 5s ([`FourStep::of`]; CUDA's with both
    /// factors at least 2). With the four-step FFT off, CUDA keeps it for
    /// the lengths the radix-2 stages do not take.
    FourStep { n1: u32, n2: u32 },
}

impl FftPasses {
    /// The four-step FFT's factors, for that form.
    pub fn four_step(&self) -> Option<FourStep> {
        match *self {
            FftPasses::FourStep { n1, n2 } => Some(FourStep { n1: n1.into(), n2: n2.into() }),
            _ => None,
        }
    }
}

/// The four-step FFT's factors and its two passes' shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FourStep {
    pub n1: u64,
    pub n2: u64,
}

/// One pass of the four-step FFT: `len`-point FFTs, `lanes` invocations
/// each, `ffts` side by side in a workgroup of `lanes`·`ffts` invocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FourStepPass {
    pub len: u64,
    pub lanes: u64,
    pub ffts: u64,
}

/// The longest FFT of one four-step pass: every pass holds its FFTs in
/// workgroup memory, as the one-pass kernels do.
pub const MAX_FOUR_STEP_PASS_LEN: u64 = 4096;

impl FourStep {
    /// The factors of `n`: n2 the least divisor of n at least √n, n1 = n / n2
    /// (n1 ≤ n2, both as near √n as the length allows: 8192 = 64·128, 400
    /// = 20·20, 6000 = 75·80); `None` where n2 would pass
    /// [`MAX_FOUR_STEP_PASS_LEN`]. Every divisor of a length of 2s, 3s and
    /// 5s is one too, so both passes run the mixed-radix FFT.
    pub fn of(n: u64) -> Option<FourStep> {
        let root = n.isqrt() + u64::from(n.isqrt() * n.isqrt() < n);
        let n2 = (root.max(1)..=n.min(MAX_FOUR_STEP_PASS_LEN)).find(|d| n.is_multiple_of(*d))?;
        Some(FourStep { n1: n / n2, n2 })
    }

    /// The `columns` pass (n1-point FFTs) and the `rows` pass (n2-point)
    /// in workgroups of `threads` (a power of two): a quarter as many lanes
    /// as points, rounded down to a power of two (a radix-4 stage's
    /// butterflies), at most the workgroup; the rest of it runs more FFTs.
    pub fn passes(&self, threads: u32) -> [FourStepPass; 2] {
        let pass = |len: u64| {
            let lanes = 1u64 << (len / 4).max(1).ilog2();
            let lanes = lanes.min(threads as u64);
            FourStepPass { len, lanes, ffts: threads as u64 / lanes }
        };
        [pass(self.n1), pass(self.n2)]
    }

    /// Complex points of the workgroup buffer both passes share: each
    /// pass's FFTs side by side, an FFT of `len` points taking `slots(len)`
    /// (WGSL: `len`; CUDA pads it: `cuda_fft_buffer_len`, its kernel's
    /// `COL_BUF_LEN`, `ROW_BUF_LEN`).
    pub fn buffer_points(&self, threads: u32, slots: impl Fn(u64) -> u64) -> u64 {
        self.passes(threads).iter().map(|p| slots(p.len) * p.ffts).max().unwrap_or(0)
    }
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
    /// ⌊log2 n_fft⌋: the radix-2 multi-pass form's stages (that form takes
    /// power-of-two lengths only; the one-pass kernels' and the four-step
    /// FFTs are mixed-radix).
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
    /// CUDA's one-pass kernels: each entry's one segment is a complex FFT
    /// of n_fft / 2 points (its even samples the real parts, its odd ones
    /// the imaginary), split into the one-sided spectrum, not a pair with
    /// a segment of zeros ([`DeviceLimits::packed_segment`]). Not written
    /// when false: the manifests of every other plan stay as they were.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub packed: bool,
}

impl KernelGeometry {
    /// The length of the complex FFT the kernel runs for an n_fft of `n`.
    pub fn fft_len(&self, n: u64) -> u64 {
        if self.packed { n / 2 } else { n }
    }
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
    pub packed: bool,
}

/// The geometry of `form` on an input of static `shape` and `batch` dims:
/// every length a launch binds, checked against the 32-bit index range and
/// the device's binding limit. A split into one chunk per entry is the
/// batch form (`KernelGeometry::plan` says which runs).
pub(super) fn kernel_plan(attrs: &WelchPeaksAttrs, shape: &[u64], batch: &[u64], form: Form, bounds: &SplitBounds, limits: &DeviceLimits) -> Result<KernelGeometry, Unsupported> {
    let Form { name, fft, split, multipass, threads, shared_bytes, twiddle_table, packed } = form;
    let n = attrs.n_fft;
    let pairs = attrs.segments.div_ceil(2);
    let too_many = |what| Unsupported::IndexRange { what, values: u64::MAX };
    let batch: u64 = batch.iter().try_fold(1u64, |p, d| p.checked_mul(*d)).ok_or(too_many("the batch"))?;
    let input_len = shape.iter().try_fold(1u64, |p, d| p.checked_mul(*d)).ok_or(too_many("the input"))?;
    let spectra_len = match fft {
        FftPasses::OnePass => 0,
        FftPasses::MultiPass | FftPasses::FourStep { .. } => batch.checked_mul(pairs).and_then(|v| v.checked_mul(n)).ok_or(too_many("the spectra"))?,
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
        packed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The factors are the divisor pair nearest √n, n1 ≤ n2, for powers of
    /// two and mixed lengths alike, 1·n for the lengths below 4.
    #[test]
    fn four_step_factors_are_nearest_the_square_root() {
        let of = |n| FourStep::of(n).map(|f| (f.n1, f.n2));
        assert_eq!([2, 3, 4, 6, 400, 4096, 8192, 6000, 65536, 15625].map(of), [(1, 2), (1, 3), (2, 2), (2, 3), (20, 20), (64, 64), (64, 128), (75, 80), (256, 256), (125, 125)].map(Some));
        for n in (2..=65536u64).filter(|n| crate::analysis::plan::fft_radices(*n).is_ok()) {
            let f = FourStep::of(n).unwrap_or_else(|| panic!("n {n} has no factors"));
            assert!(f.n1 * f.n2 == n && f.n1 <= f.n2 && f.n2 <= MAX_FOUR_STEP_PASS_LEN, "n {n}: {f:?}");
        }
    }

    /// Each pass runs a quarter as many lanes as points (a power of two, at
    /// most the workgroup), the rest of the workgroup more FFTs side by side.
    #[test]
    fn four_step_passes_fill_the_workgroup() {
        let passes = |n1, n2, threads| FourStep { n1, n2 }.passes(threads).map(|p| (p.lanes, p.ffts));
        assert_eq!(passes(64, 128, 256), [(16, 16), (32, 8)]);
        assert_eq!(passes(75, 80, 256), [(16, 16), (16, 16)]);
        assert_eq!(passes(1, 2, 2), [(1, 2), (1, 2)]);
        assert_eq!(passes(1024, 4096, 256), [(256, 1), (256, 1)]);
        assert_eq!(FourStep { n1: 75, n2: 80 }.buffer_points(256, |len| len), 16 * 80);
    }
}
