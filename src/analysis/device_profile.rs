//! A device measured by `rlx-run --calibrate`, and what it predicts: the
//! time of each way to run a matched chain (unfused as the target runs it,
//! each fused plan, a host call), from the profile's IO and compute terms.
//!
//! The model of one fused-op call on a shape of B entries of S segments
//! (P = ⌈S/2⌉ pairs, each one complex FFT of n_fft) and k peaks:
//! - work items: B (batch plans) or B·chunks (split plans), each taking q
//!   pairs at `pair_ns(n_fft)`, then its top-k (`topk_base_ns + k ·
//!   topk_per_k_ns`) or, split, its partial spectrum;
//! - the items run in ⌈items / workers⌉ waves; a split plan then sums
//!   the chunks and takes each entry's top-k;
//! - `call_ns` per call, `pass_ns` per further launch; the work overlaps
//!   reading the input at `memory_bw` (the larger of the two counts); the
//!   input moved at `upload_bw` and the result at `readback_bw` where the
//!   device is not the host.
//!
//! Every constant is measured on the device, none assumed: see
//! `runtime::calibrate`.

use super::Target;
use super::io_profile::IoProfile;
use super::plan::{DeviceLimits, SplitBounds, split_chunks};
use crate::fused::{PlanName, WelchPeaksAttrs};
use serde::{Deserialize, Serialize};

/// The `format` a profile file carries.
pub const FORMAT: &str = "rlx-opt device profile 2";

/// Largest profile file read (a profile is a few KiB).
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

/// One FFT length as the device runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FftCost {
    pub n_fft: u64,
    /// The plan that ran it (`batch`, or `multipass` past workgroup memory).
    pub plan: PlanName,
    /// Once a call, before any work: planning the FFT, finding the pipeline.
    #[serde(default)]
    pub setup_ns: f64,
    /// One worker: one pair of segments through the FFT, its power added.
    pub pair_ns: f64,
    /// One worker: the top-k of one entry, `topk_base_ns + k · topk_per_k_ns`.
    pub topk_base_ns: f64,
    pub topk_per_k_ns: f64,
}

/// The k the unfused chain's line is measured at.
pub const UNFUSED_CALIBRATION_K: u64 = 4;

/// The unfused chain as the target's runtime (RLX's Session) runs it, at
/// one FFT length: a graph run's fixed cost and each segment's, at
/// [`UNFUSED_CALIBRATION_K`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnfusedCost {
    pub n_fft: u64,
    pub call_ns: f64,
    pub segment_ns: f64,
    /// Each entry's top-k, per peak past the line's k: RLX's TopK costs
    /// with k (4 entries of one segment at n_fft 256 took 24 µs at k 4 and
    /// 66 µs at k 64 here). Profiles without it price every k as the line's.
    #[serde(default)]
    pub topk_per_k_ns: f64,
}

/// A measured device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceProfile {
    pub format: String,
    /// `cpu`, `wgpu` or `cuda`.
    pub target: String,
    /// The device, as its driver names it.
    pub device: String,
    /// Work items a split plan aims for (CPU tasks, workgroups): its chunks.
    pub parallelism: u64,
    /// Work items the device runs at the same time (CPU threads, lavapipe's
    /// threads, a GPU's resident workgroups): the width of a wave.
    pub workers: u64,
    /// Loop iterations one kernel invocation may run (see `DeviceLimits`).
    pub max_loop_iterations: u64,
    /// A call of the fused op with almost nothing to do, end to end.
    pub call_ns: f64,
    /// What a call adds when its work spreads over more than one worker
    /// (waking a CPU pool's threads).
    #[serde(default)]
    pub spread_ns: f64,
    /// Each launch a call makes beyond its first.
    pub pass_ns: f64,
    /// Bytes per ns: host to device and back (0: the device is the host),
    /// and the device reading its own memory.
    pub upload_bw: f64,
    pub readback_bw: f64,
    pub memory_bw: f64,
    /// Per FFT length, ascending.
    pub fft: Vec<FftCost>,
    /// Each plan on a small grid after the fit: measured and predicted.
    #[serde(default)]
    pub checks: Vec<PlanCheck>,
    /// RLX running the chain unfused, per FFT length (measured where
    /// rlx-run has RLX, the `rlx` feature; else the chain's IO profile and
    /// this device's FFT throughput stand in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfused: Vec<UnfusedCost>,
    /// A GPU's host CPU, measured with it: what a host call of the fused op costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Box<DeviceProfile>>,
}

/// One plan on one shape, measured after calibration and predicted by the
/// fitted profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanCheck {
    pub plan: PlanName,
    pub batch: u64,
    pub segments: u64,
    pub n_fft: u64,
    pub k: u64,
    pub measured_ms: f64,
    pub predicted_ms: f64,
}

/// A way to run a matched chain; written as its name (`unfused`, `fused
/// split`, `host call`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alternative {
    /// The chain as it is, run by the target.
    Unfused,
    /// The fused op with a native kernel and this plan.
    Fused(PlanName),
    /// The fused op as a call of the CPU kernel on the host.
    HostCall,
}

impl std::fmt::Display for Alternative {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Alternative::Unfused => f.write_str("unfused"),
            Alternative::Fused(plan) => write!(f, "fused {plan}"),
            Alternative::HostCall => f.write_str("host call"),
        }
    }
}

impl Serialize for Alternative {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A predicted time, its terms in ns (written as an object), and the
/// largest of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub alternative: Alternative,
    pub ns: f64,
    #[serde(serialize_with = "terms_as_object")]
    pub terms: Vec<(&'static str, f64)>,
    pub deciding_term: &'static str,
}

fn terms_as_object<S: serde::Serializer>(terms: &[(&'static str, f64)], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(terms.iter().map(|(name, ns)| (name, ns)))
}

/// Bytes of the input (every segment's samples) and of the result, in f64:
/// a hostile graph's shape may not fit u64 bytes.
fn operand_bytes(attrs: &WelchPeaksAttrs, batch: u64) -> (f64, f64) {
    let b = batch as f64;
    (4.0 * b * attrs.segments as f64 * attrs.frame_len as f64, 4.0 * b * 2.0 * attrs.k as f64)
}

/// `|ln(a / b)|`: how far apart two lengths are.
fn log_distance(a: u64, b: u64) -> f64 {
    (a.max(1) as f64 / b.max(1) as f64).ln().abs()
}

/// The value at `n` of measured `(length, value)` points in ascending
/// length: a measured length's own value; between two, the log-log line
/// through them; beyond the ends, that of the nearest two. Where one
/// length is measured or a value is zero, per point from the nearest.
fn interpolate(points: &[(u64, f64)], n: u64) -> f64 {
    if let Some((_, v)) = points.iter().find(|(m, _)| *m == n) {
        return *v;
    }
    let last = points.len() - 1;
    let i = points.partition_point(|(m, _)| *m < n).clamp(1.min(last), last);
    let ((n0, a), (n1, b)) = (points[i.saturating_sub(1)], points[i]);
    let (x, x0, x1) = (n.max(1) as f64, n0 as f64, n1 as f64);
    if n0 == n1 || a <= 0.0 || b <= 0.0 {
        let (m, v) = if log_distance(n0, n) <= log_distance(n1, n) { (x0, a) } else { (x1, b) };
        return v * x / m;
    }
    let t = (x / x0).ln() / (x1 / x0).ln();
    (a.ln() + t * (b.ln() - a.ln())).exp()
}

/// Work and memory overlap: the larger bounds the time. A NaN on either
/// side is kept (a comparison with NaN is false, which once let the other
/// side stand in for it), so the picker sees it and drops the prediction.
fn bound(compute_ns: f64, memory_ns: f64) -> (&'static str, f64) {
    if compute_ns.is_nan() || compute_ns >= memory_ns { ("compute", compute_ns) } else { ("memory", memory_ns) }
}

impl Prediction {
    fn new(alternative: Alternative, terms: Vec<(&'static str, f64)>) -> Prediction {
        let ns = terms.iter().map(|(_, t)| t).sum();
        let deciding_term = terms.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map_or("none", |(name, _)| name);
        Prediction { alternative, ns, terms, deciding_term }
    }
}

/// A profile's number in a message: as written where it is short, else in
/// scientific notation (`{}` spells 5e-324 with 323 zeros).
fn shown(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e15).contains(&v.abs()) { format!("{v}") } else { format!("{v:e}") }
}

/// Why a profile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read device profile {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("device profile {path} is larger than {MAX_PROFILE_BYTES} bytes")]
    TooLarge { path: String },
    #[error("device profile {path}:{line}:{column}: {message}")]
    Parse { path: String, line: usize, column: usize, message: String },
    #[error("device profile {path}: {message}")]
    Invalid { path: String, message: String },
}

impl DeviceProfile {
    /// The profile in the file at `path`, checked.
    pub fn load(path: &str) -> Result<DeviceProfile, ProfileError> {
        use std::io::Read as _;
        let file = std::fs::File::open(path).map_err(|source| ProfileError::Read { path: path.into(), source })?;
        let mut text = String::new();
        file.take(MAX_PROFILE_BYTES + 1).read_to_string(&mut text).map_err(|source| ProfileError::Read { path: path.into(), source })?;
        if text.len() as u64 > MAX_PROFILE_BYTES {
            return Err(ProfileError::TooLarge { path: path.into() });
        }
        // A leading byte-order mark (editors on Windows write one) is read
        // past, as every graph reader does; serde_json would refuse it.
        let json = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let profile: DeviceProfile = serde_json::from_str(json)
            .map_err(|e| ProfileError::Parse { path: path.into(), line: e.line(), column: e.column(), message: e.to_string() })?;
        profile.check().map_err(|message| ProfileError::Invalid { path: path.into(), message })?;
        Ok(profile)
    }

    /// The rules a usable profile keeps: its format, a known target, and
    /// every number finite and within a physical range (`crate::limits`):
    /// times 0..=1e12 ns, bandwidths 1e-3..=1e6 bytes/ns (upload and
    /// readback also 0, the device being the host), parallelism and workers
    /// 1..=2^24, a loop budget ≥ 1, FFT lengths 1..=2^24 ascending. A number
    /// outside them is a hand-edited or broken profile, and the model would
    /// divide by it or multiply by it into infinities and NaNs.
    pub fn check(&self) -> Result<(), String> {
        use crate::limits::{MAX_CPU_N_FFT, MAX_PROFILE_NS, MAX_PROFILE_WORKERS, PROFILE_BW};
        if self.format != FORMAT {
            return Err(format!("format is `{}`, expected `{FORMAT}`", self.format));
        }
        if self.target_kind().is_none() {
            return Err(format!("target `{}` is not one rlx-run calibrates (cpu, wgpu, cuda)", self.target));
        }
        let time = |name: &str, v: f64| {
            if (0.0..=MAX_PROFILE_NS).contains(&v) { Ok(()) } else { Err(format!("{name} is {}, not a time in 0..=1e12 ns", shown(v))) }
        };
        let bandwidth = |name: &str, v: f64, host_ok: bool| {
            if PROFILE_BW.contains(&v) || (host_ok && v == 0.0) {
                Ok(())
            } else {
                let host = if host_ok { " (or 0: the device is the host)" } else { "" };
                Err(format!("{name} is {}, not a bandwidth in 1e-3..=1e6 bytes/ns{host}", shown(v)))
            }
        };
        let count = |name: &str, v: u64, max: u64| if (1..=max).contains(&v) { Ok(()) } else { Err(format!("{name} is {v}, not in 1..={max}")) };
        let length = |name: &str, v: u64| count(name, v, MAX_CPU_N_FFT);
        time("call_ns", self.call_ns)?;
        time("spread_ns", self.spread_ns)?;
        time("pass_ns", self.pass_ns)?;
        bandwidth("upload_bw", self.upload_bw, true)?;
        bandwidth("readback_bw", self.readback_bw, true)?;
        bandwidth("memory_bw", self.memory_bw, false)?;
        count("parallelism", self.parallelism, MAX_PROFILE_WORKERS)?;
        count("workers", self.workers, MAX_PROFILE_WORKERS)?;
        count("max_loop_iterations", self.max_loop_iterations, u64::MAX)?;
        if self.fft.is_empty() {
            return Err("no FFT lengths measured".into());
        }
        for (i, u) in self.unfused.iter().enumerate() {
            time("unfused call_ns", u.call_ns)?;
            time("unfused segment_ns", u.segment_ns)?;
            time("unfused topk_per_k_ns", u.topk_per_k_ns)?;
            length("an unfused n_fft", u.n_fft)?;
            if i > 0 && self.unfused[i - 1].n_fft >= u.n_fft {
                return Err("unfused FFT lengths must be ascending".into());
            }
        }
        if let Some(host) = &self.host {
            host.check().map_err(|e| format!("host: {e}"))?;
            if host.target != "cpu" || host.host.is_some() {
                return Err("the host profile must be a CPU's, without a host of its own".into());
            }
        }
        for (i, f) in self.fft.iter().enumerate() {
            time("setup_ns", f.setup_ns)?;
            time("pair_ns", f.pair_ns)?;
            time("topk_base_ns", f.topk_base_ns)?;
            time("topk_per_k_ns", f.topk_per_k_ns)?;
            // Lengths are interpolated on a log scale: 0 has no place there.
            length("an n_fft", f.n_fft)?;
            if i > 0 && self.fft[i - 1].n_fft >= f.n_fft {
                return Err("FFT lengths must be ascending".into());
            }
        }
        // The checks predict nothing, but they are printed and compared.
        for c in &self.checks {
            for (name, ms) in [("measured_ms", c.measured_ms), ("predicted_ms", c.predicted_ms)] {
                if !(0.0..=MAX_PROFILE_NS / 1e6).contains(&ms) {
                    return Err(format!("a check's {name} is {}, not a time in 0..=1e6 ms", shown(ms)));
                }
            }
        }
        Ok(())
    }

    pub fn target_kind(&self) -> Option<Target> {
        Target::from_name(&self.target).filter(|t| matches!(t, Target::Cpu | Target::Wgpu | Target::Cuda))
    }

    /// The costs at `n_fft`: a measured length as measured, others by
    /// log-log interpolation between the nearest two (per point beyond the ends).
    pub fn fft_at(&self, n_fft: u64) -> FftCost {
        let at = |value: fn(&FftCost) -> f64| interpolate(&self.fft.iter().map(|f| (f.n_fft, value(f))).collect::<Vec<_>>(), n_fft);
        let nearest = self.fft.iter().min_by(|a, b| log_distance(a.n_fft, n_fft).total_cmp(&log_distance(b.n_fft, n_fft))).expect("a checked profile has FFT lengths");
        FftCost {
            n_fft,
            plan: nearest.plan,
            setup_ns: at(|f| f.setup_ns),
            pair_ns: at(|f| f.pair_ns),
            topk_base_ns: at(|f| f.topk_base_ns),
            topk_per_k_ns: at(|f| f.topk_per_k_ns),
        }
    }

    /// One call of the fused op with `plan` on `batch` entries, as rlx-run
    /// runs it: with the input moved to the device and the result back.
    pub fn predict_fused(&self, attrs: &WelchPeaksAttrs, batch: u64, plan: PlanName) -> Prediction {
        let mut terms = self.fused_terms(attrs, batch, plan);
        let (input_bytes, output_bytes) = operand_bytes(attrs, batch);
        if self.upload_bw > 0.0 {
            terms.push(("upload", input_bytes / self.upload_bw));
        }
        if self.readback_bw > 0.0 {
            terms.push(("readback", output_bytes / self.readback_bw));
        }
        Prediction::new(Alternative::Fused(plan), terms)
    }

    /// The fused op's own terms, its operands already on the device.
    fn fused_terms(&self, attrs: &WelchPeaksAttrs, batch: u64, plan: PlanName) -> Vec<(&'static str, f64)> {
        let f = self.fft_at(attrs.n_fft);
        let pairs = attrs.segments.div_ceil(2);
        let bins = attrs.bins() as f64;
        let topk = f.topk_base_ns + attrs.k as f64 * f.topk_per_k_ns;
        let limits = DeviceLimits { max_loop_iterations: self.max_loop_iterations, ..DeviceLimits::assumed(Target::Cpu) };
        // (A plan past the loop budget is never picked: `plan` refuses it.)
        let bounds = SplitBounds::of(attrs, plan.is_multipass(), &limits).ok();
        let entry_fits = bounds.is_none_or(|b| b.entry_fits);
        let cut = bounds.and_then(|b| b.cut(batch, pairs, self.parallelism).ok());
        let (chunks, per_chunk) = cut.unwrap_or_else(|| split_chunks(batch, pairs, self.parallelism, u64::MAX));
        // As `plan` makes it concrete: an entry longer than a workgroup
        // takes is split; one chunk per entry is the batch form.
        let split = (plan.is_split() || !entry_fits) && chunks > 1;
        let plan = PlanName::with(split, plan.is_multipass());
        let (items, per_item_pairs) = if plan.is_split() { (batch.saturating_mul(chunks), per_chunk) } else { (batch, pairs) };
        let waves = items.div_ceil(self.workers) as f64;
        // A split item writes its partial spectrum instead of taking a top-k.
        let item_ns = per_item_pairs as f64 * f.pair_ns + if plan.is_split() { 4.0 * bins / self.memory_bw } else { topk };
        let (input_bytes, _) = operand_bytes(attrs, batch);
        let launches = if plan.is_multipass() { 2 + attrs.n_fft.trailing_zeros() as u64 } else { 1 } + plan.is_split() as u64;
        let call = self.call_ns + f.setup_ns + if items > 1 { self.spread_ns } else { 0.0 };
        let mut terms = vec![("call", call), ("launches", (launches - 1) as f64 * self.pass_ns), bound(waves * item_ns, input_bytes / self.memory_bw)];
        if plan.is_split() {
            let entry_waves = batch.div_ceil(self.workers) as f64;
            terms.push(("combine", entry_waves * (chunks as f64 * 4.0 * bins / self.memory_bw + topk)));
        }
        terms
    }

    /// The chain run unfused by the target: as RLX was measured running it
    /// where the profile has that; else from its IO profile (`chain`: the
    /// nodes the fusion would remove): a launch each, a call per host sync,
    /// its traffic at `memory_bw`, its readback, and every segment's FFT at
    /// this device's throughput.
    pub fn predict_unfused(&self, attrs: &WelchPeaksAttrs, batch: u64, chain: &IoProfile) -> Prediction {
        let segments = batch.saturating_mul(attrs.segments);
        if !self.unfused.is_empty() {
            let at = |value: fn(&UnfusedCost) -> f64| interpolate(&self.unfused.iter().map(|u| (u.n_fft, value(u))).collect::<Vec<_>>(), attrs.n_fft);
            let extra_peaks = batch as f64 * attrs.k.saturating_sub(UNFUSED_CALIBRATION_K) as f64;
            return Prediction::new(
                Alternative::Unfused,
                vec![("call", at(|u| u.call_ns)), ("compute", segments as f64 * at(|u| u.segment_ns)), ("top-k", extra_peaks * at(|u| u.topk_per_k_ns))],
            );
        }
        let f = self.fft_at(attrs.n_fft);
        let waves = segments.div_ceil(self.workers) as f64;
        let readback_bw = if self.readback_bw > 0.0 { self.readback_bw } else { self.memory_bw };
        Prediction::new(
            Alternative::Unfused,
            vec![
                ("launches", chain.kernel_launches as f64 * self.pass_ns),
                ("syncs", chain.sync_points as f64 * self.call_ns),
                ("readback", chain.host_output_bytes as f64 / readback_bw),
                // One complex FFT a segment: a pair's worth each.
                bound(waves * f.pair_ns, chain.device_traffic_bytes as f64 / self.memory_bw),
            ],
        )
    }

    /// The fused op as a host call, as rlx-run runs it (operands and
    /// result on the host, like every alternative here): the host's CPU
    /// kernel with the batch plan (a host call carries no plan), where the
    /// profile measured its host. Inside a GPU runtime a host call also
    /// syncs and reads its operands back: the gate's thunk penalty, not
    /// priced here.
    pub fn predict_host_call(&self, attrs: &WelchPeaksAttrs, batch: u64) -> Option<Prediction> {
        let on_host = self.host.as_ref()?.predict_fused(attrs, batch, PlanName::Batch);
        Some(Prediction { alternative: Alternative::HostCall, ..on_host })
    }
}

#[cfg(test)]
pub(crate) fn example() -> DeviceProfile {
    DeviceProfile {
        format: FORMAT.into(),
        target: "cpu".into(),
        device: "test".into(),
        parallelism: 8,
        workers: 2,
        max_loop_iterations: u64::MAX,
        call_ns: 20_000.0,
        spread_ns: 0.0,
        pass_ns: 5_000.0,
        upload_bw: 0.0,
        readback_bw: 0.0,
        memory_bw: 10.0,
        fft: [64u64, 256, 1024].iter().map(|n| FftCost { n_fft: *n, plan: PlanName::Batch, setup_ns: 0.0, pair_ns: *n as f64 * 4.0, topk_base_ns: *n as f64, topk_per_k_ns: 10.0 }).collect(),
        checks: Vec::new(),
        unfused: Vec::new(),
        host: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fft_costs_interpolate_between_measured_lengths() {
        let p = example();
        assert_eq!(p.fft_at(256).pair_ns, 1024.0);
        assert!((p.fft_at(128).pair_ns - 512.0).abs() < 1e-9);
        assert!((p.fft_at(4096).pair_ns - 16384.0).abs() < 1e-6, "{}", p.fft_at(4096).pair_ns);
        assert!((p.fft_at(16).pair_ns - 64.0).abs() < 1e-9);
    }

    #[test]
    fn one_long_entry_is_predicted_faster_split() {
        let p = example();
        let a = WelchPeaksAttrs::rlx(256, 65536, 16);
        let batch = p.predict_fused(&a, 1, PlanName::Batch);
        let split = p.predict_fused(&a, 1, PlanName::Split);
        // Both workers busy instead of one.
        assert!(split.ns < batch.ns / 1.9, "{} vs {}", split.ns, batch.ns);
        assert_eq!(batch.deciding_term, "compute");
        let many = WelchPeaksAttrs::rlx(256, 8, 16);
        assert!(p.predict_fused(&many, 8192, PlanName::Batch).ns <= p.predict_fused(&many, 8192, PlanName::Split).ns);
    }

    #[test]
    fn the_unfused_chain_pays_for_each_peak_past_its_calibration() {
        let mut p = example();
        let cost: UnfusedCost = serde_json::from_str(r#"{"n_fft": 256, "call_ns": 1000.0, "segment_ns": 100.0}"#).unwrap();
        assert_eq!(cost.topk_per_k_ns, 0.0, "a profile without the term prices every k alike");
        p.unfused = vec![UnfusedCost { topk_per_k_ns: 2.0, ..cost }];
        let chain = IoProfile::default();
        let at = |k: u64| p.predict_unfused(&WelchPeaksAttrs::rlx(256, 8, k), 16, &chain).ns;
        assert_eq!(at(4), 1000.0 + 16.0 * 8.0 * 100.0);
        assert_eq!(at(64) - at(4), 16.0 * 60.0 * 2.0);
        assert_eq!(at(2), at(4));
        p.unfused[0].topk_per_k_ns = -1.0;
        assert!(p.check().unwrap_err().contains("unfused topk_per_k_ns"));
    }

    #[test]
    fn bad_profiles_are_refused_with_the_reason() {
        let mut p = example();
        assert!(p.check().is_ok());
        p.memory_bw = 0.0;
        assert!(p.check().unwrap_err().contains("memory_bw is 0, not a bandwidth in 1e-3..=1e6 bytes/ns"), "{}", p.check().unwrap_err());
        let mut p = example();
        p.fft[1].pair_ns = f64::NAN;
        assert!(p.check().unwrap_err().contains("pair_ns is NaN"));
        let mut p = example();
        p.target = "tpu".into();
        assert!(p.check().unwrap_err().contains("tpu"));
        let mut p = example();
        p.fft[0].n_fft = 0;
        assert!(p.check().unwrap_err().contains("an n_fft is 0, not in 1..=16777216"), "{}", p.check().unwrap_err());
        let mut p = example();
        p.max_loop_iterations = 0;
        assert!(p.check().unwrap_err().contains("max_loop_iterations is 0"));
    }
}
