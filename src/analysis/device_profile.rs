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
use super::plan::split_chunks;
use crate::fused::{PlanName, WelchPeaksAttrs};
use serde::{Deserialize, Serialize};

/// The `format` a profile file carries.
pub const FORMAT: &str = "rlx-opt device profile 1";

/// Largest profile file read (a profile is a few KiB).
pub const MAX_PROFILE_BYTES: u64 = 1 << 20;

/// One FFT length as the device runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FftCost {
    pub n_fft: u64,
    /// The plan that ran it (`batch`, or `multipass` past workgroup memory).
    pub plan: PlanName,
    /// One worker: one pair of segments through the FFT, its power added.
    pub pair_ns: f64,
    /// One worker: the top-k of one entry, `topk_base_ns + k · topk_per_k_ns`.
    pub topk_base_ns: f64,
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
    /// Segment pairs one workgroup may transform (see `DeviceLimits`).
    pub max_group_pairs: u64,
    /// A call of the fused op with almost nothing to do, end to end.
    pub call_ns: f64,
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

/// Work and memory overlap: the larger bounds the time.
fn bound(compute_ns: f64, memory_ns: f64) -> (&'static str, f64) {
    if compute_ns >= memory_ns { ("compute", compute_ns) } else { ("memory", memory_ns) }
}

impl Prediction {
    fn new(alternative: Alternative, terms: Vec<(&'static str, f64)>) -> Prediction {
        let ns = terms.iter().map(|(_, t)| t).sum();
        let deciding_term = terms.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map_or("none", |(name, _)| name);
        Prediction { alternative, ns, terms, deciding_term }
    }
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
        let profile: DeviceProfile = serde_json::from_str(&text)
            .map_err(|e| ProfileError::Parse { path: path.into(), line: e.line(), column: e.column(), message: e.to_string() })?;
        profile.check().map_err(|message| ProfileError::Invalid { path: path.into(), message })?;
        Ok(profile)
    }

    /// The rules a usable profile keeps: its format, a known target, finite
    /// non-negative terms, positive bandwidths and parallelism, FFT lengths
    /// ascending.
    pub fn check(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!("format is `{}`, expected `{FORMAT}`", self.format));
        }
        if self.target_kind().is_none() {
            return Err(format!("target `{}` is not one rlx-run calibrates (cpu, wgpu, cuda)", self.target));
        }
        let finite = |name: &str, v: f64| if v.is_finite() && v >= 0.0 { Ok(()) } else { Err(format!("{name} is {v}, not a finite number ≥ 0")) };
        finite("call_ns", self.call_ns)?;
        finite("pass_ns", self.pass_ns)?;
        finite("upload_bw", self.upload_bw)?;
        finite("readback_bw", self.readback_bw)?;
        if !(self.memory_bw.is_finite() && self.memory_bw > 0.0) || self.parallelism == 0 || self.workers == 0 || self.max_group_pairs == 0 {
            return Err("memory_bw, parallelism, workers and max_group_pairs must be positive".into());
        }
        if self.fft.is_empty() {
            return Err("no FFT lengths measured".into());
        }
        if let Some(host) = &self.host {
            host.check().map_err(|e| format!("host: {e}"))?;
            if host.target != "cpu" || host.host.is_some() {
                return Err("the host profile must be a CPU's, without a host of its own".into());
            }
        }
        for (i, f) in self.fft.iter().enumerate() {
            finite("pair_ns", f.pair_ns)?;
            finite("topk_base_ns", f.topk_base_ns)?;
            finite("topk_per_k_ns", f.topk_per_k_ns)?;
            if i > 0 && self.fft[i - 1].n_fft >= f.n_fft {
                return Err("FFT lengths must be ascending".into());
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
        if let Some(f) = self.fft.iter().find(|f| f.n_fft == n_fft) {
            return f.clone();
        }
        let last = self.fft.len() - 1;
        let i = self.fft.partition_point(|f| f.n_fft < n_fft).clamp(1.min(last), last);
        let (lo, hi) = (&self.fft[i.saturating_sub(1)], &self.fft[i]);
        let n = n_fft.max(1) as f64;
        let (n0, n1) = (lo.n_fft as f64, hi.n_fft as f64);
        let nearest = if (n / n0).ln().abs() <= (n / n1).ln().abs() { (lo, n0) } else { (hi, n1) };
        let at = |value: fn(&FftCost) -> f64| {
            let (a, b) = (value(lo), value(hi));
            if n0 == n1 || a <= 0.0 || b <= 0.0 {
                // One length measured, or a zero term: per point from the nearest.
                return value(nearest.0) * n / nearest.1;
            }
            let t = (n / n0).ln() / (n1 / n0).ln();
            (a.ln() + t * (b.ln() - a.ln())).exp()
        };
        FftCost {
            n_fft,
            plan: nearest.0.plan,
            pair_ns: at(|f| f.pair_ns),
            topk_base_ns: at(|f| f.topk_base_ns),
            topk_per_k_ns: at(|f| f.topk_per_k_ns),
        }
    }

    /// One call of the fused op with `plan` on `batch` entries, as rlx-run
    /// runs it: with the input moved to the device and the result back.
    pub fn predict_fused(&self, attrs: &WelchPeaksAttrs, batch: u64, plan: PlanName) -> Prediction {
        let mut terms = self.fused_terms(attrs, batch, plan);
        let input_bytes = 4.0 * (batch * attrs.segments * attrs.frame_len) as f64;
        let output_bytes = 4.0 * (batch * 2 * attrs.k) as f64;
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
        let cap = if plan.is_multipass() { u64::MAX } else { self.max_group_pairs };
        let (chunks, per_chunk) = split_chunks(batch, pairs, self.parallelism, cap);
        // As `plan` makes it concrete: an entry longer than a workgroup
        // takes is split; one chunk per entry is the batch form.
        let split = (plan.is_split() || (!plan.is_multipass() && pairs > self.max_group_pairs)) && chunks > 1;
        let plan = PlanName::with(split, plan.is_multipass());
        let (items, per_item_pairs) = if plan.is_split() { (batch.saturating_mul(chunks), per_chunk) } else { (batch, pairs) };
        let waves = items.div_ceil(self.workers) as f64;
        // A split item writes its partial spectrum instead of taking a top-k.
        let item_ns = per_item_pairs as f64 * f.pair_ns + if plan.is_split() { 4.0 * bins / self.memory_bw } else { topk };
        let input_bytes = 4.0 * (batch * attrs.segments * attrs.frame_len) as f64;
        let launches = if plan.is_multipass() { 2 + attrs.n_fft.trailing_zeros() as u64 } else { 1 } + plan.is_split() as u64;
        let mut terms = vec![("call", self.call_ns), ("launches", (launches - 1) as f64 * self.pass_ns), bound(waves * item_ns, input_bytes / self.memory_bw)];
        if plan.is_split() {
            let entry_waves = batch.div_ceil(self.workers) as f64;
            terms.push(("combine", entry_waves * (chunks as f64 * 4.0 * bins / self.memory_bw + topk)));
        }
        terms
    }

    /// The chain run unfused by the target, from its IO profile (`chain`:
    /// the nodes the fusion would remove): a launch each, a call per host
    /// sync, its traffic at `memory_bw`, its readback, and every segment's
    /// FFT at this device's throughput.
    pub fn predict_unfused(&self, attrs: &WelchPeaksAttrs, batch: u64, chain: &IoProfile) -> Prediction {
        let f = self.fft_at(attrs.n_fft);
        let segments = batch.saturating_mul(attrs.segments);
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

    /// The fused op as a host call from this device (its operands read back,
    /// the host's CPU kernel with its better plan, the result sent back),
    /// where the profile measured its host.
    pub fn predict_host_call(&self, attrs: &WelchPeaksAttrs, batch: u64) -> Option<Prediction> {
        let host = self.host.as_ref()?;
        let input_bytes = 4.0 * (batch * attrs.segments * attrs.frame_len) as f64;
        let output_bytes = 4.0 * (batch * 2 * attrs.k) as f64;
        let cpu = [PlanName::Batch, PlanName::Split].map(|p| host.predict_in_graph(attrs, batch, p).ns).into_iter().fold(f64::INFINITY, f64::min);
        let rate = |bw: f64| if bw > 0.0 { bw } else { self.memory_bw };
        Some(Prediction::new(
            Alternative::HostCall,
            vec![("sync", self.call_ns), ("readback", input_bytes / rate(self.readback_bw)), ("host", cpu), ("upload", output_bytes / rate(self.upload_bw))],
        ))
    }

    /// The fused op inside a graph on this device (its operands already
    /// there), for comparing with [`predict_unfused`](Self::predict_unfused).
    pub fn predict_in_graph(&self, attrs: &WelchPeaksAttrs, batch: u64, plan: PlanName) -> Prediction {
        let mut terms = self.fused_terms(attrs, batch, plan);
        // In a graph the op is one launch among others, not a call of its own.
        terms[0] = ("call", self.pass_ns);
        Prediction::new(Alternative::Fused(plan), terms)
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
        max_group_pairs: u64::MAX,
        call_ns: 20_000.0,
        pass_ns: 5_000.0,
        upload_bw: 0.0,
        readback_bw: 0.0,
        memory_bw: 10.0,
        fft: [64u64, 256, 1024].iter().map(|n| FftCost { n_fft: *n, plan: PlanName::Batch, pair_ns: *n as f64 * 4.0, topk_base_ns: *n as f64, topk_per_k_ns: 10.0 }).collect(),
        checks: Vec::new(),
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
    fn bad_profiles_are_refused_with_the_reason() {
        let mut p = example();
        assert!(p.check().is_ok());
        p.memory_bw = 0.0;
        assert!(p.check().unwrap_err().contains("positive"));
        let mut p = example();
        p.fft[1].pair_ns = f64::NAN;
        assert!(p.check().unwrap_err().contains("pair_ns is NaN"));
        let mut p = example();
        p.target = "tpu".into();
        assert!(p.check().unwrap_err().contains("tpu"));
    }
}
