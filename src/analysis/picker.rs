//! Which plan runs a fused op ([`PlanName`], its `plan` attribute). Without
//! a measured device profile the picker follows one rule on the device the
//! plan assumes for the target ([`DeviceLimits::assumed`]): a worker per
//! batch entry while the entries alone keep the device busy, else split
//! each entry's segments over the idle workers; the FFT in workgroup memory
//! where it fits, through device memory where it does not.

use super::Target;
use super::plan::{DeviceLimits, Unsupported, plan, split_chunks};
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
        Ok(p) => Ok(Pick { plan: p.name, reason: format!("force-plan={forced}, in its multi-pass form: n_fft {} does not fit workgroup memory", attrs.n_fft) }),
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
            let (chunks, _) = split_chunks(b, pairs, workers, limits.max_group_pairs);
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
        let (a, t) = rows(256, 8, 8192);
        let cpu = DeviceLimits::assumed(Target::Cpu);
        assert_eq!(pick(&a, &t, Target::Cpu, &cpu, Some(PlanName::Split)).unwrap(), Pick { plan: PlanName::Split, reason: "force-plan=split".into() });
        let p = pick(&a, &t, Target::Cpu, &cpu, Some(PlanName::Multipass)).unwrap();
        assert_eq!(p.plan, PlanName::Batch);
        assert!(p.reason.starts_with("force-plan=multipass does not run here (the multipass plan is for GPUs"), "{}", p.reason);
        let (a, t) = rows(8192, 8, 2);
        let p = pick(&a, &t, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu), Some(PlanName::Split)).unwrap();
        assert_eq!(p.plan, PlanName::SplitMultipass, "{}", p.reason);
    }
}
