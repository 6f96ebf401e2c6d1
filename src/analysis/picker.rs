//! Which plan runs a fused op ([`PlanName`], its `plan` attribute), and,
//! with a measured device profile, whether to fuse at all.
//!
//! Without a profile ([`pick`]) the picker follows one rule on the device
//! the plan assumes for the target ([`DeviceLimits::assumed`]): a worker per
//! batch entry while the entries alone keep the device busy, else split
//! each entry's segments over the idle workers; the FFT in workgroup memory
//! where it fits, through device memory where it does not. Whether to fuse
//! is then the IO gate's (RLX's formula).
//!
//! With a profile ([`pick_with_profile`]) it predicts every alternative —
//! the chain unfused, each plan that runs on the target, a host call — and
//! takes the fastest.

use super::Target;
use super::device_profile::{Alternative, DeviceProfile, Prediction};
use super::io_profile::IoProfile;
use super::plan::{DeviceLimits, SplitBounds, Unsupported, plan, split_chunks};
use crate::fused::{LogMelAttrs, PlanName, WelchPeaksAttrs};
use crate::ir::TensorType;
use serde::Serialize;

/// Entries with fewer segment pairs are not split: a chunk would hold a
/// few FFTs, less work than the second pass a split plan adds.
pub const MIN_SPLIT_PAIRS: u64 = 32;

/// A picked plan and the term that decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pick {
    pub plan: PlanName,
    pub reason: String,
}

/// The plan of the op with `attrs` on an operand of type `input`, on a
/// `target` device with `limits`; `forced` (`force-plan=NAME`) where that
/// plan runs there. Errors where no plan runs the op on the target.
pub fn pick(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target, limits: &DeviceLimits, forced: Option<PlanName>) -> Result<Pick, Unsupported> {
    let rule = pick_by_rule(attrs, input, target, limits)?;
    let Some(forced) = forced else { return Ok(rule) };
    let asked = WelchPeaksAttrs { plan: Some(forced), ..attrs.clone() };
    match plan(&asked, input, target, limits) {
        Ok(p) if p.name == forced => Ok(Pick { plan: forced, reason: format!("force-plan={forced}") }),
        // Its multi-pass form (the FFT does not fit workgroup memory), its
        // split form (an entry is longer than a workgroup takes), or its
        // batch form (one chunk per entry).
        Ok(p) => Ok(Pick { plan: p.name, reason: format!("force-plan={forced}, which runs here as {}", p.name) }),
        Err(why) => Ok(Pick { reason: format!("force-plan={forced} does not run here ({why}); {}", rule.reason), ..rule }),
    }
}

fn pick_by_rule(attrs: &WelchPeaksAttrs, input: &TensorType, target: Target, limits: &DeviceLimits) -> Result<Pick, Unsupported> {
    // The plan's own choice of FFT form, with the batch plan.
    let batch_plan = plan(&WelchPeaksAttrs { plan: None, ..attrs.clone() }, input, target, limits)?;
    let fft_note = if batch_plan.name.is_multipass() { format!("; n_fft {} takes the multi-pass FFT", attrs.n_fft) } else { String::new() };
    let split = PlanName::with(true, batch_plan.name.is_multipass());
    let pairs = attrs.segments.div_ceil(2);
    let batch = attrs.batch_of(input).ok().and_then(|dims| dims.iter().try_fold(1u64, |p, d| d.as_static().and_then(|d| p.checked_mul(d))));
    let workers = limits.parallelism;
    let (plan, why) = match batch {
        None => (batch_plan.name, "dynamic batch: a worker per entry".to_string()),
        Some(_) if pairs < MIN_SPLIT_PAIRS => (batch_plan.name, format!("{pairs} segment pair(s) per entry: too few to split (fewer than {MIN_SPLIT_PAIRS})")),
        Some(b) if b >= workers => (batch_plan.name, format!("batch {b} ≥ {workers} workers the {} device keeps busy", target.name())),
        Some(b) => {
            let cut = SplitBounds::of(attrs, batch_plan.name.is_multipass(), limits).and_then(|bounds| bounds.cut(b, pairs, workers));
            let (chunks, _) = cut.unwrap_or_else(|_| split_chunks(b, pairs, workers, u64::MAX));
            (split, format!("batch {b} < {workers} workers of the {} device: {pairs} segment pairs per entry in {chunks} chunks", target.name()))
        }
    };
    // The split plan itself must run here (its partial spectra must fit a binding).
    let attrs_as_picked = WelchPeaksAttrs { plan: Some(plan), ..attrs.clone() };
    if let Err(e) = super::plan::plan(&attrs_as_picked, input, target, limits) {
        return Ok(Pick { plan: batch_plan.name, reason: format!("{why}, but {plan} does not run here ({e}){fft_note}") });
    }
    Ok(Pick { plan, reason: format!("rule: {why}{fft_note}") })
}

/// What a profile predicts for one chain, and what it picks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileChoice {
    /// The device the profile measured.
    pub device: String,
    /// Every alternative with a finite prediction, unfused first.
    pub predictions: Vec<Prediction>,
    /// Alternatives whose prediction was no finite time, with it: left out
    /// of the comparison (and of the report's timings, where JSON would
    /// show them as `null`) and named in the reason.
    pub dropped: Vec<(Alternative, f64)>,
    /// The fastest fused alternative (a plan, or the host call); `None`
    /// where none has a finite prediction.
    pub picked: Option<Alternative>,
    /// It beats the chain unfused (never where either is not finite).
    pub fuse: bool,
    /// `picked` is the plan `force-plan` named, not the fastest.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
}

/// A predicted time in ms for a message: four decimals, or scientific
/// notation past 10^6 ms (a hostile shape predicted at 1e300 ns once made a
/// reason of 300 digits).
fn ms(ns: f64) -> String {
    let ms = ns / 1e6;
    if ms.abs() < 1e6 { format!("{ms:.4}") } else { format!("{ms:.4e}") }
}

impl ProfileChoice {
    pub fn prediction(&self, alternative: Alternative) -> Option<&Prediction> {
        self.predictions.iter().find(|p| p.alternative == alternative)
    }

    /// The profile predicted `alternative`, finitely or not.
    pub fn considered(&self, alternative: Alternative) -> bool {
        self.prediction(alternative).is_some() || self.dropped.iter().any(|(a, _)| *a == alternative)
    }

    /// The choice with `alternative` (a plan `force-plan` names) in place
    /// of the fastest: fused where its own prediction beats the chain
    /// unfused. The report's reason then names that plan and its time (it
    /// named the fastest, a host call, beside a fused op of the forced plan:
    /// an adversarial run).
    pub fn forced_to(mut self, alternative: Alternative) -> Self {
        let unfused = self.prediction(Alternative::Unfused).map(|p| p.ns);
        let forced = self.prediction(alternative).map(|p| p.ns);
        self.fuse = matches!((forced, unfused), (Some(forced), Some(unfused)) if forced < unfused);
        self.picked = forced.map(|_| alternative);
        self.forced = true;
        self
    }

    /// One line: the pick against the unfused chain, and the term that
    /// decided; alternatives without a finite prediction are named as dropped.
    pub fn reason(&self) -> String {
        let dropped = match self.dropped.is_empty() {
            true => String::new(),
            false => {
                let list: Vec<String> = self.dropped.iter().map(|(a, ns)| format!("{a} ({ns} ns)")).collect();
                format!("; dropped, no finite prediction: {}", list.join(", "))
            }
        };
        let device = &self.device;
        let forced = if self.forced { " (force-plan)" } else { "" };
        match (self.picked.and_then(|a| self.prediction(a)), self.prediction(Alternative::Unfused)) {
            (Some(picked), Some(unfused)) => {
                let verdict = if self.fuse { "<" } else { "≥" };
                format!(
                    "profile ({device}): {}{forced} {} ms {verdict} unfused {} ms; {} dominates the pick{dropped}",
                    picked.alternative,
                    ms(picked.ns),
                    ms(unfused.ns),
                    picked.deciding_term
                )
            }
            (Some(picked), None) => format!("profile ({device}): {}{forced} {} ms, but the chain unfused has no finite prediction to beat: not fused{dropped}", picked.alternative, ms(picked.ns)),
            (None, _) if self.forced => format!("profile ({device}): the plan force-plan names has no finite prediction: not fused{dropped}"),
            (None, _) => format!("profile ({device}): no fused alternative has a finite prediction: not fused{dropped}"),
        }
    }
}

/// Every alternative for the chain whose fused op has `attrs` on an operand
/// of type `input`, predicted by `profile`; `chain`: the IO profile of the
/// nodes fusing removes; `native`: the target has kernels for the fused op.
/// `None` where the batch is dynamic, or where nothing fused is predicted
/// (the rule and the gate decide then).
///
/// A prediction that is no finite time (a bandwidth near 0, a log-log line
/// extrapolated far past the measured lengths) is dropped, never compared:
/// `total_cmp` ranks a negative NaN below every time, which once made
/// "fused split NaN ms" the pick. Without a finite unfused prediction there
/// is nothing to beat, and the chain is not fused, as the gate does not
/// fuse on byte counts it cannot price.
pub fn pick_with_profile(profile: &DeviceProfile, attrs: &WelchPeaksAttrs, input: &TensorType, chain: &IoProfile, native: bool) -> Option<ProfileChoice> {
    let target = profile.target_kind()?;
    let batch = attrs.batch_of(input).ok()?.iter().try_fold(1u64, |p, d| d.as_static().and_then(|d| p.checked_mul(d)))?;
    let limits = DeviceLimits { parallelism: profile.parallelism, max_loop_iterations: profile.max_loop_iterations, ..DeviceLimits::assumed(target) };
    let mut all = vec![profile.predict_unfused(attrs, batch, chain)];
    if native {
        for name in PlanName::ALL {
            let asked = WelchPeaksAttrs { plan: Some(name), ..attrs.clone() };
            // Only plans that run as themselves here: the others are some plan's other form.
            if plan(&asked, input, target, &limits).is_ok_and(|p| p.name == name) {
                all.push(profile.predict_fused(attrs, batch, name));
            }
        }
    }
    all.extend(profile.predict_host_call(attrs, batch));
    compare(profile, all)
}

/// [`pick_with_profile`] for the log-mel op (`attrs` on an operand of type
/// `input`): the chain unfused, the op's native kernel (where `native`) and
/// a host call; `None` where the profile has no log-mel line (the gate
/// decides then), or the operand's size is dynamic.
pub fn pick_log_mel_with_profile(profile: &DeviceProfile, attrs: &LogMelAttrs, input: &TensorType, chain: &IoProfile, native: bool) -> Option<ProfileChoice> {
    let statics = |dims: &[crate::ir::Dim]| dims.iter().try_fold(1u64, |p, d| d.as_static().and_then(|d| p.checked_mul(d)));
    let rows = statics(&attrs.lead_of(input).ok()?)?;
    let values = statics(&input.dims)?;
    let mut all = vec![profile.predict_log_mel_unfused(attrs, rows, chain)];
    // No log-mel line on the device: nothing to weigh the chain against.
    let fused = profile.predict_log_mel(attrs, rows, values)?;
    all.extend(native.then_some(fused));
    all.extend(profile.predict_log_mel_host_call(attrs, rows, values));
    compare(profile, all)
}

/// The choice among `all` predictions (the unfused chain's first): the
/// fastest fused alternative with a finite time, and whether it beats the
/// chain unfused; `None` where there is nothing to compare.
fn compare(profile: &DeviceProfile, all: Vec<Prediction>) -> Option<ProfileChoice> {
    if all.len() < 2 {
        return None;
    }
    let (predictions, dropped): (Vec<Prediction>, Vec<Prediction>) = all.into_iter().partition(|p| p.ns.is_finite());
    let dropped = dropped.into_iter().map(|p| (p.alternative, p.ns)).collect();
    let best = predictions.iter().filter(|p| p.alternative != Alternative::Unfused).min_by(|a, b| a.ns.total_cmp(&b.ns));
    let unfused = predictions.iter().find(|p| p.alternative == Alternative::Unfused);
    let fuse = matches!((best, unfused), (Some(best), Some(unfused)) if best.ns < unfused.ns);
    let picked = best.map(|p| p.alternative);
    Some(ProfileChoice { device: profile.device.clone(), predictions, dropped, picked, fuse, forced: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;

    fn rows(n_fft: u64, segments: u64, batch: u64) -> (WelchPeaksAttrs, TensorType) {
        (WelchPeaksAttrs::rlx(n_fft, segments, 4), TensorType::new(&[batch * segments, n_fft], DType::F32))
    }

    #[test]
    fn few_long_entries_split_and_many_short_ones_do_not() {
        let cpu = DeviceLimits::assumed(Target::Cpu);
        let (a, t) = rows(256, 65536, 1);
        let p = pick(&a, &t, Target::Cpu, &cpu, None).unwrap();
        assert_eq!(p.plan, PlanName::Split, "{}", p.reason);
        assert!(p.reason.contains("32768 segment pairs per entry in 32 chunks"), "{}", p.reason);
        let (a, t) = rows(256, 8, 8192);
        assert_eq!(pick(&a, &t, Target::Cpu, &cpu, None).unwrap().plan, PlanName::Batch);
        let (a, t) = rows(8192, 128, 1);
        assert_eq!(pick(&a, &t, Target::Cuda, &DeviceLimits::assumed(Target::Cuda), None).unwrap().plan, PlanName::SplitMultipass);
        let (a, t) = rows(8192, 4, 256);
        assert_eq!(pick(&a, &t, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu), None).unwrap().plan, PlanName::Multipass);
        let (a, t) = rows(256, 62, 1);
        assert_eq!(pick(&a, &t, Target::Cpu, &cpu, None).unwrap().plan, PlanName::Batch);
        let (a, t) = rows(256, 64, 1);
        assert_eq!(pick(&a, &t, Target::Cpu, &cpu, None).unwrap().plan, PlanName::Split);
    }

    #[test]
    fn forced_plans_apply_where_they_run() {
        let (a, t) = rows(256, 64, 2);
        let cpu = DeviceLimits::assumed(Target::Cpu);
        assert_eq!(pick(&a, &t, Target::Cpu, &cpu, Some(PlanName::Split)).unwrap(), Pick { plan: PlanName::Split, reason: "force-plan=split".into() });
        // 8192 entries fill the CPU: split into one chunk each, it is the batch plan.
        let (a, t) = rows(256, 8, 8192);
        let p = pick(&a, &t, Target::Cpu, &cpu, Some(PlanName::Split)).unwrap();
        assert_eq!(p, Pick { plan: PlanName::Batch, reason: "force-plan=split, which runs here as batch".into() });
        let p = pick(&a, &t, Target::Cpu, &cpu, Some(PlanName::Multipass)).unwrap();
        assert_eq!(p.plan, PlanName::Batch);
        assert!(p.reason.starts_with("force-plan=multipass does not run here (the multipass plan is for GPUs"), "{}", p.reason);
        let (a, t) = rows(8192, 8, 2);
        let p = pick(&a, &t, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu), Some(PlanName::Split)).unwrap();
        assert_eq!(p.plan, PlanName::SplitMultipass, "{}", p.reason);
    }
}

#[cfg(test)]
mod profile_tests {
    use super::*;
    use crate::analysis::device_profile::example;
    use crate::ir::DType;

    #[test]
    fn the_profile_predicts_every_alternative_and_takes_the_fastest() {
        let profile = example();
        let attrs = WelchPeaksAttrs::rlx(256, 65536, 16);
        let input = TensorType::new(&[65536, 256], DType::F32);
        // The chain as RLX runs it: the spectrum written and read back.
        let chain = IoProfile { kernel_launches: 3, sync_points: 1, host_output_bytes: 128, device_traffic_bytes: 5 * 65536 * 256 * 4 };
        let choice = pick_with_profile(&profile, &attrs, &input, &chain, true).unwrap();
        let names: Vec<String> = choice.predictions.iter().map(|p| p.alternative.to_string()).collect();
        assert_eq!(names, ["unfused", "fused batch", "fused split"]);
        assert_eq!(choice.picked, Some(Alternative::Fused(PlanName::Split)));
        assert!(choice.fuse, "{}", choice.reason());
        assert!(choice.reason().starts_with("profile (test): fused split "), "{}", choice.reason());
        // Without native kernels and without a measured host, nothing fused is predicted.
        assert!(pick_with_profile(&profile, &attrs, &input, &chain, false).is_none());
        // A dynamic batch is left to the rule.
        let dynamic = TensorType { dims: [crate::ir::Dim::Dynamic(0), crate::ir::Dim::Static(256)].into_iter().collect(), dtype: DType::F32 };
        assert!(pick_with_profile(&profile, &attrs, &dynamic, &chain, true).is_none());
    }

    /// A prediction that is no finite time is dropped, named in the reason,
    /// and never picked: `total_cmp` ranks a negative NaN (what x86 makes
    /// of inf − inf) below every time, so it once won the pick.
    #[test]
    fn predictions_that_are_not_finite_are_dropped() {
        // A GPU's, with its host's (a CPU's profile has no host).
        let mut profile = DeviceProfile { target: "wgpu".into(), upload_bw: 1.0, readback_bw: 1.0, ..example() };
        let mut host_cpu = example();
        host_cpu.fft[1].pair_ns = -f64::NAN;
        profile.host_cpu = Some(Box::new(host_cpu));
        let attrs = WelchPeaksAttrs::rlx(256, 64, 16);
        let input = TensorType::new(&[64, 256], DType::F32);
        let chain = IoProfile { kernel_launches: 3, sync_points: 1, host_output_bytes: 128, device_traffic_bytes: 5 * 64 * 256 * 4 };
        let choice = pick_with_profile(&profile, &attrs, &input, &chain, true).unwrap();
        assert!(choice.predictions.iter().all(|p| p.ns.is_finite()), "{choice:?}");
        assert_eq!(choice.dropped.iter().map(|(a, _)| *a).collect::<Vec<_>>(), [Alternative::HostCall]);
        assert!(matches!(choice.picked, Some(Alternative::Fused(_))), "{choice:?}");
        let reason = choice.reason();
        assert!(reason.ends_with("; dropped, no finite prediction: host call (NaN ns)"), "{reason}");
        assert!(!reason.contains("NaN ms"), "{reason}");
        // Forced to what has a finite prediction, that one is weighed and
        // named; forced to what has none, nothing is fused.
        let picked = choice.picked.unwrap();
        let forced = choice.clone().forced_to(picked);
        assert_eq!((forced.picked, forced.fuse), (Some(picked), choice.fuse));
        assert!(forced.reason().starts_with(&format!("profile (test): {picked} (force-plan) ")), "{}", forced.reason());
        let forced = choice.forced_to(Alternative::HostCall);
        assert_eq!((forced.picked, forced.fuse), (None, false));
        assert!(forced.reason().starts_with("profile (test): the plan force-plan names has no finite prediction: not fused"), "{}", forced.reason());

        // Nothing finite to beat: not fused, whatever the fused predictions.
        let mut profile = example();
        profile.memory_bw = 5e-324;
        let choice = pick_with_profile(&profile, &attrs, &input, &chain, true).unwrap();
        assert!(!choice.fuse, "{}", choice.reason());
        assert!(choice.predictions.iter().all(|p| p.ns.is_finite()), "{choice:?}");
        assert!(choice.reason().contains("dropped, no finite prediction: unfused (inf ns)"), "{}", choice.reason());
    }

    /// Huge but finite predictions read as numbers, not 300 digits.
    #[test]
    fn huge_predictions_are_written_in_scientific_notation() {
        assert_eq!(ms(1.5e6), "1.5000");
        assert_eq!(ms(2.0e306), "2.0000e300");
    }
}
