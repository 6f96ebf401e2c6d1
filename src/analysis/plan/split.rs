//! How split plans cut each entry's segment pairs into chunks, within the
//! device's parallelism and loop budget.

use super::{DeviceLimits, MAX_THREADS, Unsupported};
use crate::analysis::loop_budget::{self, KernelLoops};
use crate::fused::WelchPeaksAttrs;

/// How a split plan cuts the `pairs` segment pairs of each of `batch`
/// entries: `(chunks, pairs_per_chunk)`, enough chunks that
/// `batch × chunks` reaches `parallelism` and no chunk has more than
/// `max_per_chunk` pairs, no chunk empty, only the last one shorter.
pub fn split_chunks(batch: u64, pairs: u64, parallelism: u64, max_per_chunk: u64) -> (u64, u64) {
    let pairs = pairs.max(1);
    let wanted = parallelism.div_ceil(batch.max(1)).clamp(1, pairs);
    let per_chunk = pairs.div_ceil(wanted).min(max_per_chunk.max(1));
    (pairs.div_ceil(per_chunk), per_chunk)
}

/// What the device's loop budget ([`loop_budget`]) allows the plans of one
/// op: whether one workgroup can take a whole entry, and how a split must
/// cut it so that each of its kernels stays within the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitBounds {
    /// The batch (or multi-pass) form's per-entry kernel fits.
    pub entry_fits: bool,
    /// The most pairs one split work item may take (`partial_psd`, `partial_of`).
    pub max_chunk_pairs: u64,
    /// The most chunks one entry's partial spectra may be summed from
    /// (`peaks_of_partials`).
    pub max_chunks: u64,
    pub(super) loops: KernelLoops,
    budget: u64,
}

impl SplitBounds {
    /// The bounds of an op with `attrs` on a device with `limits`, or why
    /// no plan of the FFT form (`multipass` or not) fits its loop budget.
    pub fn of(attrs: &WelchPeaksAttrs, multipass: bool, limits: &DeviceLimits) -> Result<SplitBounds, Unsupported> {
        let threads = MAX_THREADS.min(attrs.n_fft.clamp(1, MAX_THREADS as u64) as u32) as u64;
        let loops = KernelLoops { n_fft: attrs.n_fft, threads, bins: attrs.bins(), k: attrs.k };
        let budget = loop_budget::usable(limits.max_loop_iterations);
        let over = |what, iterations| Err(Unsupported::LoopBudget { what, iterations, budget });
        if loops.top_k() > budget {
            return over("the top-k", loops.top_k());
        }
        let pairs = attrs.segments.div_ceil(2);
        let entry_fits = if multipass { loops.multipass_peaks(pairs) } else { loops.one_pass_batch(pairs) } <= budget;
        if budget == u64::MAX {
            return Ok(SplitBounds { entry_fits, max_chunk_pairs: u64::MAX, max_chunks: u64::MAX, loops, budget });
        }
        // A split that cannot leave the batch form must cut an entry in two
        // at least: one pair past the budget has no plan.
        let most_pairs = loops.max_chunk_pairs(multipass, budget);
        let max_chunk_pairs = if entry_fits { most_pairs } else { most_pairs.min(pairs / 2) };
        if max_chunk_pairs == 0 {
            return over("one segment pair with the top-k", if multipass { loops.multipass_peaks(1) } else { loops.one_pass_batch(1) });
        }
        let max_chunks = loops.max_partials(budget);
        if !entry_fits && max_chunks < 2 {
            return over("summing two partial spectra", loops.peaks_of_partials(2));
        }
        Ok(SplitBounds { entry_fits, max_chunk_pairs, max_chunks, loops, budget })
    }

    /// How a split cuts `pairs` pairs of each of `batch` entries for
    /// `parallelism` workers within these bounds: `(chunks, pairs_per_chunk)`
    /// as [`split_chunks`], with fewer, longer chunks where the combining
    /// kernel could not sum so many; an error where no cut fits both.
    pub fn cut(&self, batch: u64, pairs: u64, parallelism: u64) -> Result<(u64, u64), Unsupported> {
        let (chunks, per_chunk) = split_chunks(batch, pairs, parallelism, self.max_chunk_pairs);
        if chunks <= self.max_chunks {
            return Ok((chunks, per_chunk));
        }
        let per_chunk = pairs.max(1).div_ceil(self.max_chunks.max(1));
        let chunks = pairs.max(1).div_ceil(per_chunk);
        match per_chunk <= self.max_chunk_pairs {
            true => Ok((chunks, per_chunk)),
            false => {
                let fewest = pairs.max(1).div_ceil(self.max_chunk_pairs.max(1));
                Err(Unsupported::LoopBudget { what: "summing the partial spectra", iterations: self.loops.peaks_of_partials(fewest), budget: self.budget })
            }
        }
    }
}
