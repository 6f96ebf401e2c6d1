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
use crate::fused::{PlanName, WelchPeaksAttrs};
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
    /// Every alternative, unfused first.
    pub predictions: Vec<Prediction>,
    /// The fastest fused alternative (a plan, or the host call).
    pub picked: Alternative,
    /// It beats the chain unfused.
    pub fuse: bool,
}

impl ProfileChoice {
    pub fn prediction(&self, alternative: Alternative) -> Option<&Prediction> {
        self.predictions.iter().find(|p| p.alternative == alternative)
    }

    /// One line: the pick against the unfused chain, and the term that decided.
    pub fn reason(&self) -> String {
        let ms = |a| self.prediction(a).map_or(f64::NAN, |p| p.ns / 1e6);
        let picked = self.prediction(self.picked).map_or("none", |p| p.deciding_term);
        let (unfused, fused) = (ms(Alternative::Unfused), ms(self.picked));
        let verdict = if self.fuse { "<" } else { "≥" };
        format!("profile ({}): {} {fused:.4} ms {verdict} unfused {unfused:.4} ms; {} dominates the pick", self.device, self.picked, picked)
    }
}

/// Every alternative for the chain whose fused op has `attrs` on an operand
/// of type `input`, predicted by `profile`; `chain`: the IO profile of the
/// nodes fusing removes; `native`: the target has kernels for the fused op.
/// `None` where the batch is dynamic (the rule and the gate decide then).
pub fn pick_with_profile(profile: &DeviceProfile, attrs: &WelchPeaksAttrs, input: &TensorType, chain: &IoProfile, native: bool) -> Option<ProfileChoice> {
    let target = profile.target_kind()?;
    let batch = attrs.batch_of(input).ok()?.iter().try_fold(1u64, |p, d| d.as_static().and_then(|d| p.checked_mul(d)))?;
    let limits = DeviceLimits { parallelism: profile.parallelism, max_loop_iterations: profile.max_loop_iterations, ..DeviceLimits::assumed(target) };
    let mut predictions = vec![profile.predict_unfused(attrs, batch, chain)];
    if native {
        for name in PlanName::ALL {
            let asked = WelchPeaksAttrs { plan: Some(name), ..attrs.clone() };
            // Only plans that run as themselves here: the others are some plan's other form.
            if plan(&asked, input, target, &limits).is_ok_and(|p| p.name == name) {
                predictions.push(profile.predict_fused(attrs, batch, name));
            }
        }
    }
    predictions.extend(profile.predict_host_call(attrs, batch));
    let best = predictions[1..].iter().min_by(|a, b| a.ns.total_cmp(&b.ns))?;
    let (picked, fuse) = (best.alternative, best.ns < predictions[0].ns);
    Some(ProfileChoice { device: profile.device.clone(), predictions, picked, fuse })
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
        assert_eq!(choice.picked, Alternative::Fused(PlanName::Split));
        assert!(choice.fuse, "{}", choice.reason());
        assert!(choice.reason().starts_with("profile (test): fused split "), "{}", choice.reason());
        // Without native kernels and without a measured host, nothing fused is predicted.
        assert!(pick_with_profile(&profile, &attrs, &input, &chain, false).is_none());
        // A dynamic batch is left to the rule.
        let dynamic = TensorType { dims: [crate::ir::Dim::Dynamic(0), crate::ir::Dim::Static(256)].into_iter().collect(), dtype: DType::F32 };
        assert!(pick_with_profile(&profile, &attrs, &dynamic, &chain, true).is_none());
    }
}
