//! RLX running the unfused chains, measured for a device profile: per FFT
//! length, RLX's WelchPeaks chain (`unfused`: one segment, then 8 segments
//! an entry at growing batch sizes, k 4) in RLX's own Session, and the line
//! through those times: a run's fixed cost and each segment's; then 64
//! entries at k 4 and at k 64: each peak's cost. And RLX's log-mel chain
//! (`unfused_log_mel`: frames → `Concat` → `Fft` → `LogMel`, 80 mels) at
//! growing frame counts: a run's fixed cost and each frame's.

use crate::error::ExtError;
use crate::{engine, ir_pass};
use rlx_opt::analysis::Target;
use rlx_opt::analysis::device_profile::{LOG_MEL_CALIBRATION_MELS, UNFUSED_CALIBRATION_K, UnfusedCost, UnfusedLogMelCost};
use rlx_opt::runtime::calibrate::{FFT_LENGTHS, LOG_MEL_LENGTHS, MAX_VALUES, MIN_RUN_NS, fit_line, median_ns};
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

/// RLX's unfused log-mel chain on the `target` device, per FFT length:
/// runs of 8 frames, then 4× more until a run takes [`MIN_RUN_NS`] after
/// at least two runs (or four runs, or [`MAX_VALUES`]), and the line
/// through them. RLX alone can be very slow here (on lavapipe a frame of
/// n_fft 400 takes about 0.2 s), so a run over 100 ms is timed 3 times, not 5.
pub fn calibrate_unfused_log_mel(target: Target, progress: &mut dyn FnMut(&str)) -> Result<Vec<UnfusedLogMelCost>, ExtError> {
    // RLX's GPU FFT of a length that is not a power of two can take minutes
    // for a single run of 8 frames (n_fft 400 on lavapipe: no result in 120
    // s), and a run cannot be cut short: measured on the CPU only.
    if target != Target::Cpu {
        return Err(ExtError::Rlx(format!("measured on the CPU only: on {target} one run of RLX's chain at n_fft 400 can take minutes (lavapipe: none within 120 s)")));
    }
    let _alone = ir_pass::suspend();
    let time_chain = |n: u64, frames: u64| -> Result<f64, ExtError> {
        let text = rlx_ir::text::print(&log_mel_chain(frames as usize, n as usize, LOG_MEL_CALIBRATION_MELS as usize));
        let graph = rlx_opt::format::rlx_text::parse(&text).map_err(|e| ExtError::Rlx(e.to_string()))?;
        let inputs = random_inputs(&graph, 1).map_err(|e| ExtError::Rlx(e.to_string()))?;
        let mut compiled = engine::compile(&graph, target)?;
        let rlx = |e: ExtError| RuntimeError::Device { backend: "rlx", message: e.to_string() };
        let mut run = || compiled.run(&inputs).map(drop).map_err(rlx);
        let first = median_ns(1, &mut run).map_err(|e| ExtError::Rlx(e.to_string()))?;
        median_ns(if first > 1e8 { 3 } else { 5 }, &mut run).map_err(|e| ExtError::Rlx(e.to_string()))
    };
    let mut costs = Vec::new();
    for n in LOG_MEL_LENGTHS {
        progress(&format!("RLX unfused log-mel, n_fft {n}"));
        let mut points = Vec::new();
        let mut frames = 8;
        while frames * n <= MAX_VALUES {
            let ns = time_chain(n, frames)?;
            points.push((frames as f64, ns));
            if (points.len() >= 2 && ns >= MIN_RUN_NS) || points.len() >= 4 {
                break;
            }
            frames *= 4;
        }
        let (frame_ns, call_ns) = fit_line(&points);
        costs.push(UnfusedLogMelCost { n_fft: n, call_ns: call_ns.max(0.0), frame_ns: frame_ns.max(0.0) });
    }
    Ok(costs)
}

/// RLX's native log-mel chain on `[frames, n_fft]` (as `Graph::log_mel`
/// users build it), the filters rlx-ir's mel filterbank as an input.
fn log_mel_chain(frames: usize, n_fft: usize, mels: usize) -> rlx_ir::Graph {
    use rlx_ir::{DType, Op, Shape};
    let mut g = rlx_ir::Graph::new("log_mel");
    let shape = Shape::new(&[frames, n_fft], DType::F32);
    let x = g.input("frames", shape.clone());
    let zero = g.binary(rlx_ir::op::BinaryOp::Sub, x, x, shape);
    let block = g.add_node(Op::Concat { axis: 1 }, vec![x, zero], Shape::new(&[frames, 2 * n_fft], DType::F32));
    let spec = g.fft(block, false);
    let filters = g.input("mel_filters", Shape::new(&[mels, n_fft / 2 + 1], DType::F32));
    let out = g.log_mel(spec, filters);
    g.set_outputs(vec![out]);
    g
}
