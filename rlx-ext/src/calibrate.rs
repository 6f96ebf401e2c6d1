//! RLX running the unfused chain, measured for a device profile (its
//! `unfused` costs): per FFT length, RLX's WelchPeaks chain (one segment,
//! then 8 segments an entry at growing batch sizes, k 4) in RLX's own
//! Session, and the line through those times: a run's fixed cost and each
//! segment's; then 64 entries at k 4 and at k 64: each peak's cost.

use crate::error::ExtError;
use crate::{engine, ir_pass};
use rlx_opt::analysis::Target;
use rlx_opt::analysis::device_profile::{UNFUSED_CALIBRATION_K, UnfusedCost};
use rlx_opt::runtime::calibrate::{FFT_LENGTHS, MAX_VALUES, MIN_RUN_NS, fit_line, median_ns};
use rlx_opt::runtime::{RuntimeError, random_inputs};

/// RLX's unfused chain on the `target` device, per FFT length.
pub fn calibrate_unfused(target: Target, progress: &mut dyn FnMut(&str)) -> Result<Vec<UnfusedCost>, ExtError> {
    // RLX alone: a registered fuse-welch-peaks pass must leave the chain
    // be, and be back as its user installed it once measured (or failed).
    let _alone = ir_pass::suspend();
    const SEGMENTS: u64 = 8;
    const K: u64 = UNFUSED_CALIBRATION_K;
    // Entries the top-k is measured on: enough for its share to stand
    // above a run's noise.
    const TOPK_ENTRIES: u64 = 64;
    let mut costs = Vec::new();
    // A run of RLX's chain on `rows` rows, `segments` an entry, top-`k`: median ns.
    let time_chain = |n: u64, rows: u64, segments: u64, k: u64| -> Result<f64, ExtError> {
        let text = rlx_opt::testgen::welch_chains(1, rows, n, segments, k).replace("return %3, %4", "return %4");
        let graph = rlx_opt::format::rlx_text::parse(&text).map_err(|e| ExtError::Rlx(e.to_string()))?;
        let inputs = random_inputs(&graph, 1).map_err(|e| ExtError::Rlx(e.to_string()))?;
        let mut compiled = engine::compile(&graph, target)?;
        let rlx = |e: ExtError| RuntimeError::Device { backend: "rlx", message: e.to_string() };
        median_ns(5, &mut || compiled.run(&inputs).map(drop).map_err(rlx)).map_err(|e| ExtError::Rlx(e.to_string()))
    };
    for n in FFT_LENGTHS {
        progress(&format!("RLX unfused, n_fft {n}"));
        let mut points = Vec::new();
        // First one segment alone: the smallest run fixes the intercept,
        // and a line anchored at 8 segments put RLX's one-segment run at
        // half what it took (n_fft 4096: 55 µs predicted, 109 µs measured).
        let mut shapes = std::iter::once((1, 1)).chain(std::iter::successors(Some(1u64), |b| Some(b * 4)).map(|batch| (batch, SEGMENTS)));
        while let Some((batch, segments)) = shapes.next().filter(|(batch, segments)| batch * segments * n <= MAX_VALUES) {
            let rows = batch * segments;
            let ns = time_chain(n, rows, segments, K)?;
            points.push((rows as f64, ns));
            if points.len() >= 4 && ns >= 3.0 * MIN_RUN_NS {
                break;
            }
        }
        let (segment_ns, call_ns) = fit_line(&points);
        // The top-k's share: entries of one segment at the line's k and at
        // the most peaks the fused op's grid asks (64, or every bin).
        let wide_k = 64.min(n / 2 + 1);
        let topk_per_k_ns = if wide_k > K {
            let (narrow, wide) = (time_chain(n, TOPK_ENTRIES, 1, K)?, time_chain(n, TOPK_ENTRIES, 1, wide_k)?);
            ((wide - narrow) / (TOPK_ENTRIES * (wide_k - K)) as f64).max(0.0)
        } else {
            0.0
        };
        costs.push(UnfusedCost { n_fft: n, call_ns: call_ns.max(0.0), segment_ns: segment_ns.max(0.0), topk_per_k_ns });
    }
    Ok(costs)
}
