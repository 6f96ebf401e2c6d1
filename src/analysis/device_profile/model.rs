//! What a profile predicts: the time of each way to run a matched chain.

use super::interpolate::interpolate;
use super::{DeviceProfile, UNFUSED_CALIBRATION_K, UnfusedCost};
use crate::analysis::Target;
use crate::analysis::io_profile::IoProfile;
use crate::analysis::plan::{DeviceLimits, SplitBounds, split_chunks};
use crate::fused::{PlanName, WelchPeaksAttrs};
use serde::Serialize;

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
        let on_host_cpu = self.host_cpu.as_ref()?.predict_fused(attrs, batch, PlanName::Batch);
        Some(Prediction { alternative: Alternative::HostCall, ..on_host_cpu })
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
        assert!(matches!(p.check().unwrap_err(), super::super::InvalidProfile::Time { name: "unfused topk_per_k_ns", .. }));
    }
}
