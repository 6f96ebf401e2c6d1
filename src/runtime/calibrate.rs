//! `rlx-run --calibrate`: measure the device a target runs on and fit the
//! terms of a [`DeviceProfile`]: the fixed cost of a call and of each
//! further launch, transfer and memory bandwidths, and per FFT length the
//! time one worker takes per pair of segments and per top-k. Then each
//! plan is timed on a small grid beside its prediction, so a profile says
//! how well it predicts its own device.
//!
//! Every measurement is a median of a few runs after a warm-up; shapes are
//! kept small enough (≤ 32 MiB of input) for the whole calibration to take
//! tens of seconds on a CPU and on lavapipe.

use super::{FusedKernel, RuntimeError, Tensor};
use crate::analysis::device_profile::{DeviceProfile, FORMAT, FftCost, LOG_MEL_CALIBRATION_MELS, LogMelCost, PlanCheck};
use crate::analysis::plan::{DeviceLimits, plan, f32_type};
use crate::analysis::Target;
use crate::fused::{LogMelAttrs, PlanName, WelchPeaksAttrs};
use std::time::Instant;

/// What calibration needs of a device beyond running the fused op.
pub trait CalibrationDevice: FusedKernel {
    /// The limits the device plans with (its parallelism among them).
    fn device_limits(&self) -> DeviceLimits;
    /// Work items it runs at the same time.
    fn workers(&self) -> u64;
    /// ns to move `bytes` to the device, back, and to copy them within it;
    /// `None` where the device is the host.
    fn transfer_ns(&self, bytes: usize) -> Result<Option<(f64, f64, f64)>, RuntimeError>;
    /// Median ns of the op's launches on `input` with the operands already
    /// on the device, where the device can time those alone (a GPU); `None`
    /// where a whole call is all there is to time.
    fn resident_ns(&self, _attrs: &WelchPeaksAttrs, _input: &Tensor) -> Result<Option<f64>, RuntimeError> {
        Ok(None)
    }
    /// [`Self::resident_ns`] for the log-mel op's frames (its filters'
    /// bands found beforehand, outside the timing).
    fn resident_log_mel_ns(&self, _attrs: &LogMelAttrs, _frames: &Tensor, _filters: &Tensor) -> Result<Option<f64>, RuntimeError> {
        Ok(None)
    }
}

/// FFT lengths measured: every one-pass length class, and one multi-pass.
pub const FFT_LENGTHS: [u64; 5] = [64, 256, 1024, 4096, 16384];
/// FFT lengths the log-mel op's line is measured at: powers of two from
/// small to speech front ends', and Whisper's 400 (2⁴·5²).
pub const LOG_MEL_LENGTHS: [u64; 5] = [64, 256, 400, 512, 1024];
/// Values of input one measured run takes at most (32 MiB).
pub const MAX_VALUES: u64 = 1 << 23;
/// A measured run is grown until it takes this long, so that differences
/// of runs stand above the noise.
pub const MIN_RUN_NS: f64 = 3e6;

/// Steps of [`calibrate`], for a progress bar.
pub fn steps() -> u64 {
    3 + 4 * FFT_LENGTHS.len() as u64 + LOG_MEL_LENGTHS.len() as u64 + checks().len() as u64
}

/// The shapes each plan is checked on after the fit: (batch, segments, n_fft, k).
fn checks() -> Vec<(u64, u64, u64, u64)> {
    vec![(1, 4096, 256, 16), (16, 256, 256, 16), (256, 8, 256, 16), (1, 512, 1024, 64), (64, 16, 64, 4)]
}

/// Measure `device`, a `target` device named `name`, reporting each step
/// to `progress` (what is being measured).
pub fn calibrate(target: Target, name: &str, device: &dyn CalibrationDevice, progress: &mut dyn FnMut(&str)) -> Result<DeviceProfile, RuntimeError> {
    let limits = device.device_limits();
    let workers = device.workers().max(1);
    progress("transfer and memory bandwidth");
    let probe = 16 << 20;
    let (upload_bw, readback_bw, memory_bw) = match device.transfer_ns(probe)? {
        Some((up, back, copy)) => (probe as f64 / up, probe as f64 / back, 2.0 * probe as f64 / copy),
        None => (0.0, 0.0, cpu_memory_bw(probe)),
    };
    let bench = Bench { device, workers, upload_bw, readback_bw };
    let calls = bench.call_costs(progress)?;
    let mut fft = Vec::new();
    for n in FFT_LENGTHS {
        fft.push(bench.fft_cost(n, target, &limits, &calls, progress)?);
    }
    let mut log_mel = Vec::new();
    for n in LOG_MEL_LENGTHS {
        log_mel.extend(bench.log_mel_cost(n, progress)?);
    }
    let mut profile = DeviceProfile {
        format: FORMAT.into(),
        target: target.name().into(),
        device: name.into(),
        parallelism: limits.parallelism,
        workers,
        max_loop_iterations: limits.max_loop_iterations,
        call_ns: calls.call_ns,
        spread_ns: calls.spread_ns,
        pass_ns: calls.pass_ns,
        upload_bw,
        readback_bw,
        memory_bw,
        fft,
        checks: Vec::new(),
        unfused: Vec::new(),
        log_mel,
        unfused_log_mel: Vec::new(),
        host_cpu: None,
    };
    check_plans(device, &mut profile, progress)?;
    profile.check().map_err(|e| RuntimeError::Device { backend: "calibration", message: format!("the measurements make no profile: {e}") })?;
    Ok(profile)
}

/// The device being calibrated and its transfer bandwidths (0: the device
/// is the host), which every measurement below subtracts.
struct Bench<'d> {
    device: &'d dyn CalibrationDevice,
    workers: u64,
    upload_bw: f64,
    readback_bw: f64,
}

/// What a call costs besides its work, from calls with next to nothing to do.
struct CallCosts {
    call_ns: f64,
    spread_ns: f64,
    pass_ns: f64,
    /// What a time of [`Bench::work`] holds besides the work itself.
    work_overhead_ns: f64,
}

impl Bench<'_> {
    /// ns to move `values` f32 of input to the device and `outputs` back.
    fn transfers(&self, values: u64, outputs: u64) -> f64 {
        let up = if self.upload_bw > 0.0 { 4.0 * values as f64 / self.upload_bw } else { 0.0 };
        let back = if self.readback_bw > 0.0 { 4.0 * outputs as f64 / self.readback_bw } else { 0.0 };
        up + back
    }

    /// The op's work on `batch` entries of noise, in ns. The per-item terms
    /// are fitted on the op's work alone: timed with the operands in place
    /// where the device can (on an H100 the transfers of a calibration
    /// input took milliseconds, and their noise hid a kernel's differences:
    /// n_fft 4096 came out free), else whole calls less their transfers.
    fn work(&self, attrs: &WelchPeaksAttrs, batch: u64) -> Result<f64, RuntimeError> {
        let input = noise(attrs, batch);
        match self.device.resident_ns(attrs, &input)? {
            Some(ns) => Ok(ns),
            None => Ok(median_call_ns(self.device, attrs, &input)? - self.transfers(input.data.len() as u64, batch * 2 * attrs.k)),
        }
    }

    /// A call with next to nothing to do: what every call costs before its
    /// work (a launch, a sync); the same spread over every worker: what
    /// waking them adds (a CPU pool's threads; nothing much on a GPU); and
    /// the cost of a split's second launch.
    fn call_costs(&self, progress: &mut dyn FnMut(&str)) -> Result<CallCosts, RuntimeError> {
        let (device, workers) = (self.device, self.workers);
        progress("the cost of a call");
        let tiny = WelchPeaksAttrs { plan: Some(PlanName::Batch), ..WelchPeaksAttrs::rlx(2, 2, 1) };
        let call_ns = (time_ns(device, &tiny, 1)? - self.transfers(4, 2)).max(0.0);
        let spread_ns = (time_ns(device, &tiny, workers)? - self.transfers(workers * 4, workers * 2) - call_ns).max(0.0);
        // One entry of next to nothing split in chunks, against the same unsplit:
        // the cost of the split's second pass.
        progress("the cost of a second launch");
        let tiny_long_entry = |plan| WelchPeaksAttrs { plan: Some(plan), ..WelchPeaksAttrs::rlx(2, 4 * workers, 1) };
        let split_total = time_ns(device, &tiny_long_entry(PlanName::Split), 1)? - spread_ns;
        let pass_ns = (split_total - time_ns(device, &tiny_long_entry(PlanName::Batch), 1)?).max(0.0);
        let work_overhead_ns = match device.resident_ns(&tiny, &noise(&tiny, workers))? {
            Some(ns) => ns,
            None => call_ns + spread_ns,
        };
        Ok(CallCosts { call_ns, spread_ns, pass_ns, work_overhead_ns })
    }

    /// The costs of FFT length `n`: per pair, per top-k, and a call's setup.
    fn fft_cost(&self, n: u64, target: Target, limits: &DeviceLimits, calls: &CallCosts, progress: &mut dyn FnMut(&str)) -> Result<FftCost, RuntimeError> {
        let workers = self.workers;
        let big_k = 64.min(n / 2 + 1);
        // Enough entries to fill the device and to take a measurable time,
        // the same in every run, so that the differences of runs are
        // per-item times of whole waves.
        let attrs = |pairs: u64, k: u64| WelchPeaksAttrs::rlx(n, 2 * pairs, k);
        progress(&format!("n_fft {n}: one pair per entry"));
        let (entries, one_pair_ns) = grow(limits.parallelism.max(workers), 2 * n, |entries| self.work(&attrs(1, 4), entries))?;
        let waves = entries.div_ceil(workers) as f64;
        progress(&format!("n_fft {n}: top-{big_k}"));
        let big_k_ns = self.work(&attrs(1, big_k), entries)?;
        // The time per pair: a line through runs of 1, 2, 4, … pairs per
        // entry, on as many whole waves of entries as leave room for at
        // least 8 pairs each (four runs: one difference is noisy on small
        // devices, and two runs are a line through any outlier).
        progress(&format!("n_fft {n}: more pairs per entry"));
        // Where not even one wave of 8-pair entries fits (a GPU's thousand
        // workers), one partial wave: fewer runs would leave no line.
        let room = (MAX_VALUES / (16 * n)).max(1);
        let series_entries = if room >= workers { entries.min(room) / workers * workers } else { room };
        let series_waves = series_entries.div_ceil(workers) as f64;
        let mut pair_runs = vec![(1.0, if series_entries == entries { one_pair_ns } else { self.work(&attrs(1, 4), series_entries)? })];
        let mut pairs = 2;
        while 2 * pairs * n * series_entries <= MAX_VALUES && (pair_runs.len() < 4 || pair_runs.last().is_some_and(|r| r.1 < 3.0 * MIN_RUN_NS)) {
            pair_runs.push((pairs as f64, self.work(&attrs(pairs, 4), series_entries)?));
            pairs *= 2;
        }
        let (slope, _) = fit_line(&pair_runs);
        // What a call at this length costs before its work: planning the
        // FFT, finding the pipeline.
        progress(&format!("n_fft {n}: one entry"));
        let one_entry_ns = time_ns(self.device, &attrs(1, 4), 1)?;
        let pair_ns = (slope / series_waves).max(0.0);
        let per_item = ((one_pair_ns - calls.work_overhead_ns) / waves).max(0.0);
        let topk_per_k_ns = ((big_k_ns - one_pair_ns) / waves).max(0.0) / (big_k - 4).max(1) as f64;
        let topk_base_ns = (per_item - pair_ns - 4.0 * topk_per_k_ns).max(0.0);
        let setup_ns = (one_entry_ns - calls.call_ns - self.transfers(2 * n, 8) - per_item).max(0.0);
        let ran = plan(&WelchPeaksAttrs::rlx(n, 2, 4), &f32_type(&[2, n as usize]), target, limits).map(|p| p.name).unwrap_or(PlanName::Batch);
        Ok(FftCost { n_fft: n, plan: ran, setup_ns, pair_ns, topk_base_ns, topk_per_k_ns })
    }
}

impl Bench<'_> {
    /// The fused log-mel op at FFT length `n`: one worker's time per frame
    /// (at [`LOG_MEL_CALIBRATION_MELS`] mels), the slope of calls on
    /// growing frame counts (so a call's fixed cost drops out) times the
    /// workers sharing them; `None` where the device has no log-mel kernel
    /// (the profile then leaves log-mel to the gate).
    fn log_mel_cost(&self, n: u64, progress: &mut dyn FnMut(&str)) -> Result<Option<LogMelCost>, RuntimeError> {
        progress(&format!("log-mel, n_fft {n}"));
        let attrs = LogMelAttrs::frames(n, LOG_MEL_CALIBRATION_MELS);
        let filters = triangles(LOG_MEL_CALIBRATION_MELS as usize, attrs.bins() as usize);
        let work = |rows: u64| -> Result<f64, RuntimeError> {
            let frames = Tensor::new(vec![rows as usize, n as usize], noise_values((rows * n) as usize));
            // On a GPU a call's transfers and launch hide the frames'
            // differences (an H200's line came out 0 ns a frame at n_fft
            // 64–512): the kernel alone where the device can time it.
            if let Some(ns) = self.device.resident_log_mel_ns(&attrs, &frames, &filters)? {
                return Ok(ns);
            }
            let ns = median_calls_ns(&mut || self.device.run_log_mel(&attrs, &frames, &filters, None).map(drop))?;
            Ok(ns - self.transfers(rows * n, rows * LOG_MEL_CALIBRATION_MELS))
        };
        let start = 8 * self.workers;
        let (rows, ns) = match grow(start, n, work) {
            Err(RuntimeError::NoKernel { .. }) => return Ok(None),
            other => other?,
        };
        // A line through the grown run and its halves and quarters (the
        // input budget may leave no room above it): three points, so one
        // disturbed run does not tilt it.
        let mut runs = vec![(rows as f64, ns)];
        for part in [2, 4] {
            let count = rows / part;
            if count >= self.workers {
                runs.push((count as f64, work(count)?));
            }
        }
        let (slope, _) = fit_line(&runs);
        Ok(Some(LogMelCost { n_fft: n, frame_ns: (slope * self.workers as f64).max(0.0) }))
    }
}

/// `mels` triangular filters over `bins` bins, evenly spaced, each
/// overlapping its neighbours as a mel filterbank's do: the calibration's
/// and the CPU bench's filters (the op's cost depends on the bands'
/// widths, not their values).
pub fn triangles(mels: usize, bins: usize) -> Tensor {
    let mut data = vec![0f32; mels * bins];
    for m in 0..mels {
        let (lo, hi) = (m * bins / (mels + 1), ((m + 2) * bins / (mels + 1)).min(bins));
        for k in lo..hi {
            data[m * bins + k] = 1.0 - ((2 * k) as f32 - (lo + hi) as f32).abs() / (hi - lo).max(1) as f32;
        }
    }
    Tensor::new(vec![mels, bins], data)
}

/// Each plan timed on the [`checks`] shapes beside the fitted profile's prediction.
fn check_plans(device: &dyn CalibrationDevice, profile: &mut DeviceProfile, progress: &mut dyn FnMut(&str)) -> Result<(), RuntimeError> {
    for (batch, segments, n, k) in checks() {
        progress(&format!("check: {batch} x {segments} segments, n_fft {n}, k {k}"));
        for plan in [PlanName::Batch, PlanName::Split] {
            let attrs = WelchPeaksAttrs { plan: Some(plan), ..WelchPeaksAttrs::rlx(n, segments, k) };
            let measured_ms = time_ns(device, &attrs, batch)? / 1e6;
            let predicted_ms = profile.predict_fused(&attrs, batch, plan).ns / 1e6;
            profile.checks.push(PlanCheck { plan, batch, segments, n_fft: n, k, measured_ms, predicted_ms });
        }
    }
    Ok(())
}

/// The median ns of `runs` calls of `f`, after one untimed call.
pub fn median_ns(runs: usize, f: &mut dyn FnMut() -> Result<(), RuntimeError>) -> Result<f64, RuntimeError> {
    f()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64() * 1e9);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The slope of a line through `points`, and the intercept that line puts
/// under the first (smallest) point. The slope is the repeated median
/// (Siegel): for each point the median of its slopes to the others, then
/// the median of those. Any one run slowed by something else on the
/// machine, the largest included, leaves it where the others put it
/// (least squares through the two or three runs that fitted made n_fft
/// 4096 free on one calibration here). The fixed cost is what the
/// smallest run leaves over.
pub fn fit_line(points: &[(f64, f64)]) -> (f64, f64) {
    let per_point: Vec<f64> = points
        .iter()
        .filter_map(|a| {
            let slopes: Vec<f64> = points.iter().filter(|b| b.0 != a.0).map(|b| (b.1 - a.1) / (b.0 - a.0)).filter(|s| s.is_finite()).collect();
            median(slopes)
        })
        .collect();
    let slope = median(per_point).unwrap_or(0.0);
    let (x0, y0) = points.first().copied().unwrap_or((0.0, 0.0));
    (slope, y0 - slope * x0)
}

/// The median (the mean of the middle two of an even count), `None` of nothing.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// The smallest count, from `start` doubling, whose run takes at least
/// [`MIN_RUN_NS`] (or whose input would pass [`MAX_VALUES`], `values_each`
/// values a count), and that run's ns.
pub fn grow(start: u64, values_each: u64, mut run: impl FnMut(u64) -> Result<f64, RuntimeError>) -> Result<(u64, f64), RuntimeError> {
    let mut count = start.max(1);
    loop {
        let ns = run(count)?;
        if ns >= MIN_RUN_NS || 2 * count * values_each > MAX_VALUES {
            return Ok((count, ns));
        }
        count *= 2;
    }
}

/// Median ns of one call of the op with `attrs` on `batch` entries of noise.
fn time_ns(device: &dyn CalibrationDevice, attrs: &WelchPeaksAttrs, batch: u64) -> Result<f64, RuntimeError> {
    median_call_ns(device, attrs, &noise(attrs, batch))
}

/// `batch` entries of the op's input: deterministic noise in [-1, 1).
fn noise(attrs: &WelchPeaksAttrs, batch: u64) -> Tensor {
    let rows = (batch * attrs.segments) as usize;
    let n = attrs.frame_len as usize;
    Tensor::new(vec![rows, n], noise_values(rows * n))
}

/// `len` values of deterministic noise in [-1, 1): every calibration input.
fn noise_values(len: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect()
}

/// Median ns of one call of the op with `attrs` on `input`.
fn median_call_ns(device: &dyn CalibrationDevice, attrs: &WelchPeaksAttrs, input: &Tensor) -> Result<f64, RuntimeError> {
    median_calls_ns(&mut || device.run(attrs, input, None).map(drop))
}

/// Median ns of `call`: short runs are noisy, so as many as fit in about
/// 30 ms, 5 to 50.
fn median_calls_ns(call: &mut dyn FnMut() -> Result<(), RuntimeError>) -> Result<f64, RuntimeError> {
    let first = median_ns(1, call)?;
    let runs = (30e6 / first.max(1.0)).clamp(5.0, 50.0) as usize;
    median_ns(runs, call)
}

/// Bytes per ns the CPU's cores read together: an integer sum over
/// `bytes` (integers, so that the sum vectorises and reading bounds it).
fn cpu_memory_bw(bytes: usize) -> f64 {
    use rayon::prelude::*;
    let data = vec![1u64; bytes / 8];
    let sum = || data.par_chunks(1 << 15).map(|c| c.iter().fold(0u64, |a, x| a.wrapping_add(*x))).reduce(|| 0, u64::wrapping_add);
    let ns = median_ns(5, &mut || {
        std::hint::black_box(sum());
        Ok(())
    });
    bytes as f64 / ns.expect("summing cannot fail")
}

impl CalibrationDevice for super::CpuKernel {
    fn device_limits(&self) -> DeviceLimits {
        super::welch::this_cpu()
    }

    fn workers(&self) -> u64 {
        rayon::current_num_threads() as u64
    }

    fn transfer_ns(&self, _: usize) -> Result<Option<(f64, f64, f64)>, RuntimeError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::fit_line;

    #[test]
    fn a_line_through_exact_points_is_that_line() {
        let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0].iter().map(|&x| (x, 50.0 + 10.0 * x)).collect();
        let (slope, intercept) = fit_line(&points);
        assert!((slope - 10.0).abs() < 1e-9, "{slope}");
        assert!((intercept - 50.0).abs() < 1e-9, "{intercept}");
    }

    #[test]
    fn one_disturbed_run_does_not_flatten_the_line() {
        // The first run slowed to 3× by something else on the machine: a
        // least-squares line through these slopes downwards (−1.5).
        let points = [(1.0, 180.0), (2.0, 70.0), (4.0, 90.0), (8.0, 130.0)];
        let (slope, _) = fit_line(&points);
        assert!((slope - 10.0).abs() < 1e-9, "{slope}");
    }

    #[test]
    fn a_disturbed_largest_run_does_not_steepen_the_line() {
        let points = [(1.0, 60.0), (2.0, 70.0), (4.0, 90.0), (8.0, 1.5 * 130.0)];
        let (slope, _) = fit_line(&points);
        assert!((slope - 10.0).abs() < 1e-9, "{slope}");
    }

    #[test]
    fn degenerate_points_give_a_flat_line_not_a_nan() {
        assert_eq!(fit_line(&[]), (0.0, 0.0));
        assert_eq!(fit_line(&[(2.0, 5.0)]), (0.0, 5.0));
        assert_eq!(fit_line(&[(2.0, 5.0), (2.0, 7.0)]), (0.0, 5.0));
    }
}
