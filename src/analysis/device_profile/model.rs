//! What a profile predicts: the time of each way to run a matched chain.

use super::interpolate::interpolate;
use super::{DeviceProfile, UNFUSED_CALIBRATION_K, UnfusedCost, UnfusedLogMelCost};
use crate::analysis::Target;
use crate::analysis::io_profile::IoProfile;
use crate::analysis::plan::{CPU_FRAMES_PER_GROUP, DeviceLimits, SplitBounds, split_chunks};
use crate::fused::{LogMelAttrs, PlanName, WelchPeaksAttrs};
use serde::Serialize;

/// A way to run a matched chain; written as its name (`unfused`, `fused
/// split`, `host call`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alternative {
    /// The chain as it is, run by the target.
    Unfused,
    /// The fused op with a native kernel and this plan.
    Fused(PlanName),
    /// The fused op with its native kernel, for an op with one way to run
    /// (log-mel: no plans).
    FusedOp,
    /// The fused op as a call of the CPU kernel on the host.
    HostCall,
}

impl std::fmt::Display for Alternative {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Alternative::Unfused => f.write_str("unfused"),
            Alternative::Fused(plan) => write!(f, "fused {plan}"),
            Alternative::FusedOp => f.write_str("fused"),
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

impl DeviceProfile {
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
        // The four-step FFT (WGSL's, CUDA's by default) takes two passes;
        // CUDA's radix-2 stages, where the runtime plans them, a launch each.
        let fft_launches = match self.target.as_str() {
            "cuda" => cuda_multipass_fft_launches(attrs.n_fft),
            _ => 1,
        };
        let launches = if plan.is_multipass() { 2 + fft_launches } else { 1 } + plan.is_split() as u64;
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
        // One complex FFT a segment: a pair's worth each.
        self.unfused_by_io(chain, segments, self.fft_at(attrs.n_fft).pair_ns)
    }

    /// A chain run unfused, from its IO profile (`chain`: the nodes the
    /// fusion would remove): a launch each, a call per host sync, its
    /// traffic at `memory_bw`, its readback, and `items` FFTs of `item_ns`
    /// each spread over the workers.
    fn unfused_by_io(&self, chain: &IoProfile, items: u64, item_ns: f64) -> Prediction {
        let waves = items.div_ceil(self.workers) as f64;
        let readback_bw = if self.readback_bw > 0.0 { self.readback_bw } else { self.memory_bw };
        Prediction::new(
            Alternative::Unfused,
            vec![
                ("launches", chain.kernel_launches as f64 * self.pass_ns),
                ("syncs", chain.sync_points as f64 * self.call_ns),
                ("readback", chain.host_output_bytes as f64 / readback_bw),
                bound(waves * item_ns, chain.device_traffic_bytes as f64 / self.memory_bw),
            ],
        )
    }

    /// One call of the fused log-mel op's native kernel on `rows` frames
    /// read from `input_values` values, as rlx-run runs it (the input moved
    /// to the device and the result back); `None` where the profile has no
    /// log-mel line.
    pub fn predict_log_mel(&self, attrs: &LogMelAttrs, rows: u64, input_values: u64) -> Option<Prediction> {
        let frame_ns = self.log_mel_frame_ns(attrs.n_fft)?;
        let (input_bytes, output_bytes) = (4.0 * input_values as f64, 4.0 * rows as f64 * attrs.n_mels as f64);
        // A CPU worker's item is a group of frames, one per SIMD lane, and a
        // group's worth is computed however few frames fill it; one group
        // runs on the calling thread (no pool to wake). A GPU is priced by
        // frames (its line's slope is per worker-frame), whichever form ran
        // when it was calibrated: a workgroup per frame, or CUDA's warp form
        // (RLX_OPT_CUDA_LOG_MEL_WARPS), which a profile does not record.
        let group = if self.target_kind() == Some(Target::Cpu) { CPU_FRAMES_PER_GROUP } else { 1 };
        let items = rows.div_ceil(group);
        let waves = items.div_ceil(self.workers) as f64;
        let call = self.call_ns + if items > 1 { self.spread_ns } else { 0.0 };
        let mut terms = vec![("call", call), bound(waves * group as f64 * frame_ns, input_bytes / self.memory_bw)];
        if self.upload_bw > 0.0 {
            terms.push(("upload", input_bytes / self.upload_bw));
        }
        if self.readback_bw > 0.0 {
            terms.push(("readback", output_bytes / self.readback_bw));
        }
        Some(Prediction::new(Alternative::FusedOp, terms))
    }

    /// The log-mel chain run unfused: from its IO profile, and one complex
    /// FFT of n_fft per frame (RLX transforms `[x | 0]`: a pair's worth).
    pub fn predict_log_mel_unfused(&self, attrs: &LogMelAttrs, rows: u64, chain: &IoProfile) -> Prediction {
        if self.unfused_log_mel.is_empty() {
            return self.unfused_by_io(chain, rows, self.fft_at(attrs.n_fft).pair_ns);
        }
        let line = |value: fn(&UnfusedLogMelCost) -> f64| self.unfused_log_mel.iter().map(|u| (u.n_fft, value(u))).collect::<Vec<_>>();
        // A run's fixed cost is no function of the length to extrapolate
        // (a line through two noisy intercepts put RLX's run at n_fft 16 at
        // 0.1 µs): past the measured lengths, the nearest one's.
        let (first, last) = (self.unfused_log_mel[0].n_fft, self.unfused_log_mel[self.unfused_log_mel.len() - 1].n_fft);
        let call = interpolate(&line(|u| u.call_ns), attrs.n_fft.clamp(first, last));
        Prediction::new(Alternative::Unfused, vec![("call", call), ("compute", rows as f64 * interpolate(&line(|u| u.frame_ns), attrs.n_fft))])
    }

    /// The fused log-mel op as a host call: the host CPU's kernel, where
    /// the profile measured its host with a log-mel line.
    pub fn predict_log_mel_host_call(&self, attrs: &LogMelAttrs, rows: u64, input_values: u64) -> Option<Prediction> {
        let on_host_cpu = self.host_cpu.as_ref()?.predict_log_mel(attrs, rows, input_values)?;
        Some(Prediction { alternative: Alternative::HostCall, ..on_host_cpu })
    }

    /// One frame's time on one worker at `n_fft` (log-log between measured
    /// lengths), where the profile has a log-mel line.
    fn log_mel_frame_ns(&self, n_fft: u64) -> Option<f64> {
        (!self.log_mel.is_empty()).then(|| interpolate(&self.log_mel.iter().map(|m| (m.n_fft, m.frame_ns)).collect::<Vec<_>>(), n_fft))
    }

    /// The fused op as a host call, as rlx-run runs it (operands and
    /// result on the host, like every alternative here): the host's CPU
    /// kernel with the batch plan (a host call carries no plan), where the
    /// profile measured its host. Inside a GPU runtime a host call also
    /// syncs and reads its operands back: the gate's thunk penalty, not
    /// priced here.
    pub fn predict_host_call(&self, attrs: &WelchPeaksAttrs, batch: u64) -> Option<Prediction> {
        let on_host_cpu = self.host_cpu.as_ref()?.predict_fused(attrs, batch, PlanName::Batch);
        Some(Prediction { alternative: Alternative::HostCall, ..on_host_cpu })
    }
}


/// What a CUDA multi-pass plan of `n_fft` points launches for its FFT
/// beside its two other launches (`launches` above): the four-step FFT's
/// rows after its columns (1, as WGSL's), or the radix-2 stages after the
/// load, a launch each (log2 n), where the CUDA runtime, reading this
/// process's environment, plans them (`RLX_OPT_CUDA_FOUR_STEP=0`).
fn cuda_multipass_fft_launches(n_fft: u64) -> u64 {
    match crate::analysis::plan::multipass_fft(Target::Cuda, n_fft, true, &DeviceLimits::assumed_as_asked(Target::Cuda)) {
        Ok(crate::analysis::plan::FftPasses::MultiPass) => n_fft.trailing_zeros() as u64,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::super::example;
    use super::*;

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
    fn log_mel_is_predicted_from_its_own_line_and_only_with_one() {
        let mut p = example();
        let a = LogMelAttrs::frames(400, 80);
        // 1,000 frames on 2 CPU workers: 125 groups of 8, 63 waves of 8
        // frames of the measured 1,200 ns, beside the call; the frames'
        // reads (1.6 MB at 10 B/ns) are less.
        let fused = p.predict_log_mel(&a, 1000, 400_000).unwrap();
        assert_eq!(fused.alternative, Alternative::FusedOp);
        assert_eq!(fused.ns, 20_000.0 + 63.0 * 8.0 * 1200.0);
        assert_eq!(fused.deciding_term, "compute");
        // Between measured lengths, log-log (3 ns per sample at 256 and
        // 1024); 2 frames cost a whole group.
        assert!((p.predict_log_mel(&LogMelAttrs::frames(512, 80), 2, 1024).unwrap().ns - 20_000.0 - 8.0 * 1536.0).abs() < 1e-6);
        // A GPU runs a workgroup per frame: 1,000 frames on 2 workers are 500 waves.
        let gpu = DeviceProfile { target: "wgpu".into(), ..p.clone() };
        assert_eq!(gpu.predict_log_mel(&a, 1000, 400_000).unwrap().ns, 20_000.0 + 500.0 * 1200.0);
        // Unfused: the chain's IO and a pair's worth of FFT a frame.
        let chain = IoProfile { kernel_launches: 4, ..IoProfile::default() };
        let unfused = p.predict_log_mel_unfused(&a, 1000, &chain);
        assert_eq!(unfused.ns, 4.0 * 5_000.0 + 500.0 * p.fft_at(400).pair_ns);
        assert!(p.predict_log_mel_host_call(&a, 1000, 400_000).is_none(), "no host profile");
        // With RLX's own line: its fixed cost and each frame's.
        p.unfused_log_mel = vec![UnfusedLogMelCost { n_fft: 400, call_ns: 5e4, frame_ns: 3e4 }, UnfusedLogMelCost { n_fft: 1600, call_ns: 8e4, frame_ns: 12e4 }];
        assert_eq!(p.predict_log_mel_unfused(&a, 1000, &chain).ns, 5e4 + 1000.0 * 3e4);
        // Below the measured lengths the call is the nearest's; the frame
        // follows the log-log line (here ∝ n_fft).
        let small = p.predict_log_mel_unfused(&LogMelAttrs::frames(100, 10), 10, &chain);
        assert_eq!(small.terms[0], ("call", 5e4));
        assert!((small.terms[1].1 - 10.0 * 7.5e3).abs() < 1e-6, "{small:?}");
        p.log_mel.clear();
        assert!(p.predict_log_mel(&a, 1000, 400_000).is_none(), "no line: the gate decides");
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
        assert!(matches!(p.check().unwrap_err(), super::super::InvalidProfile::Time { name, .. } if name.ends_with("].topk_per_k_ns") && name.starts_with("unfused[")));
    }
}
