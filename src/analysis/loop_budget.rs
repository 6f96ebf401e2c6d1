//! How many loop iterations one invocation of each GPU kernel runs, for
//! devices that cap them. lavapipe (Mesa's llvmpipe) counts every loop
//! iteration of a shader invocation against one shared limiter of 65,535
//! (`LP_MAX_TGSI_LOOP_ITERATIONS`, gallivm) and, past it, leaves every loop
//! at once without an error: a workgroup that transforms too many segment
//! pairs or takes too many peaks writes a partial result. Plans keep each
//! kernel within the device's budget by splitting the pairs over more
//! workgroups, or refuse the kernel where no split helps (a top-k past it).
//!
//! The counts follow the loops of `kernels/*.wgsl` (a loop of m iterations
//! costs m + 1, its exit test included), checked on lavapipe with the
//! mixed-radix FFT the one-pass kernels share (`kernels/fft_mixed_radix.wgsl`):
//! one workgroup of the batch plan computed at most 5,026 pairs of n_fft 256
//! (k 16), 7,274 of n_fft 16 (k 8), 1,124 of n_fft 4096 (k 16), 3,842 of
//! n_fft 512 and 5,950 of n_fft 64; the model gives one or two pairs fewer.
//! (The radix-2 FFT before it took 2,113 pairs of n_fft 256, and one loop
//! iteration more per pair than its loops.)

/// lavapipe's limiter: loop iterations of one invocation, all loops together.
pub const LAVAPIPE_LOOP_ITERATIONS: u64 = 65_535;

/// The share of a capped budget the plans use: the counts are a model
/// fitted to measurements, so they keep a sixteenth in reserve.
pub fn usable(budget: u64) -> u64 {
    if budget == u64::MAX { u64::MAX } else { budget - budget / 16 }
}

/// The loop shape of one op's kernels: FFT length, threads per workgroup,
/// one-sided bins and k.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLoops {
    pub n_fft: u64,
    pub threads: u64,
    pub bins: u64,
    pub k: u64,
}

/// A loop of `m` iterations, its exit test included.
fn looped(m: u64) -> u64 {
    m.saturating_add(1)
}

impl KernelLoops {
    /// Bins each thread keeps (the kernels' `BPT`).
    fn per_thread(&self) -> u64 {
        self.bins.div_ceil(self.threads.max(1))
    }

    /// One segment pair of the one-pass FFT (`add_pairs`): the load (the
    /// digit reversal has no loop), the mixed-radix FFT's stages
    /// (`kernels/fft_mixed_radix.wgsl`: straight-line, a loop of unrolled
    /// butterflies each), the power of the bins.
    pub fn one_pass_pair(&self) -> u64 {
        let t = self.threads.max(1);
        // Lengths the FFT does not take have no one-pass kernel (the plan refuses them first).
        let radices = super::plan::fft_radices(self.n_fft).unwrap_or_default();
        let stages: u64 = radices.iter().map(|r| looped((self.n_fft / *r as u64).div_ceil(t))).sum();
        // 1: the pair's own iteration of the loop over pairs.
        1 + looped(self.n_fft.div_ceil(t)) + stages + looped(self.per_thread())
    }

    /// Filling the FFT's twiddle table, once per workgroup of the one-pass
    /// kernels (counted where the kernel has no table too: it is a loop or
    /// two).
    pub fn twiddle_table(&self) -> u64 {
        looped(self.n_fft.div_ceil(self.threads.max(1)))
    }

    /// Zeroing the bins, and writing them as a partial spectrum.
    pub fn bins_pass(&self) -> u64 {
        looped(self.per_thread())
    }

    /// `write_peaks`: every thread's head, then k rounds of a workgroup
    /// argmax (`block_max`), the winner taking its next head (at worst one
    /// thread wins every round). The argmax loops log2(threads) times in
    /// workgroup memory; with subgroups of at least 8 lanes (the only ones
    /// the runtime takes where loops are capped) each lane reads at most as
    /// many subgroups' slots, and at least one.
    pub fn top_k(&self) -> u64 {
        let log2_threads = (self.threads.max(1).trailing_zeros() as u64).max(1);
        let round = 1 + looped(self.per_thread()) + looped(log2_threads);
        let setup = looped(self.per_thread().div_ceil(32)) + looped(self.per_thread());
        setup.saturating_add(looped(self.k)).saturating_add(self.k.saturating_mul(round))
    }

    /// Summing `rows` spectra or partial spectra per bin (the multi-pass
    /// `spectra_power`, `peaks_of_partials`).
    pub fn sum_rows(&self, rows: u64) -> u64 {
        looped(self.per_thread()).saturating_add(self.per_thread().saturating_mul(1 + looped(rows)))
    }

    /// The one-pass batch kernel over `pairs` pairs.
    pub fn one_pass_batch(&self, pairs: u64) -> u64 {
        (self.bins_pass() + self.twiddle_table()).saturating_add(pairs.saturating_mul(self.one_pass_pair())).saturating_add(self.top_k())
    }

    /// The multi-pass `peaks_of` over `pairs` spectra.
    pub fn multipass_peaks(&self, pairs: u64) -> u64 {
        self.sum_rows(pairs).saturating_add(self.top_k())
    }

    /// `peaks_of_partials` over `chunks` partial spectra.
    pub fn peaks_of_partials(&self, chunks: u64) -> u64 {
        self.sum_rows(chunks).saturating_add(self.top_k())
    }

    /// The most partial spectra `peaks_of_partials` may sum within `budget`
    /// (with its top-k).
    pub fn max_partials(&self, budget: u64) -> u64 {
        if budget == u64::MAX {
            return u64::MAX;
        }
        let per_bin = self.per_thread().max(1);
        // sum_rows(c) = bins_pass + per_bin·(c + 2)
        (budget.saturating_sub(self.top_k()).saturating_sub(self.bins_pass()) / per_bin).saturating_sub(2)
    }

    /// The most pairs one split work item may take within `budget`
    /// (`partial_psd` one-pass, `partial_of` multi-pass); 0 where not one fits.
    pub fn max_chunk_pairs(&self, multipass: bool, budget: u64) -> u64 {
        if budget == u64::MAX {
            return u64::MAX;
        }
        let fixed = 2 * self.bins_pass() + if multipass { 0 } else { self.twiddle_table() };
        if multipass {
            let per_bin = self.per_thread().max(1);
            // sum_rows(p) = bins_pass + per_bin·(p + 2)
            (budget.saturating_sub(fixed) / per_bin).saturating_sub(2)
        } else {
            budget.saturating_sub(fixed) / self.one_pass_pair()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loops(n_fft: u64, k: u64) -> KernelLoops {
        KernelLoops { n_fft, threads: n_fft.min(256), bins: n_fft / 2 + 1, k }
    }

    /// The model against the lavapipe limits it was fitted to (one
    /// workgroup, batch plan, k 16 or as given): the most pairs the model
    /// lets one workgroup take is at most what lavapipe computed right with
    /// either form of the top-k (subgroups or workgroup memory alone), and
    /// at most 3 pairs fewer. A restatement of the fit; lavapipe itself at
    /// shapes outside it: `tests/plans.rs`,
    /// `the_loop_budget_model_predicts_lavapipe_where_it_was_not_fitted`.
    #[test]
    fn the_model_reproduces_the_lavapipe_limits_it_was_fitted_to() {
        let most = |n, k| (1..).find(|p| loops(n, k).one_pass_batch(p + 1) > LAVAPIPE_LOOP_ITERATIONS).unwrap();
        // (n_fft, k, lavapipe's most with workgroup memory, with subgroups)
        for (n, k, workgroup, subgroups) in [(16, 8, 7274, 7276), (256, 16, 5026, 5032), (4096, 16, 1126, 1127)] {
            let m = most(n, k);
            assert!(m <= workgroup.min(subgroups) && m + 3 >= workgroup.min(subgroups), "n_fft {n} k {k}: the model's most {m}");
        }
        // lavapipe took 408 pairs with k 2049 (either form): the top-k's
        // count is cautious, as it takes one thread to win every round.
        let m = most(4096, 2049);
        assert!((360..=408).contains(&m), "k 2049: the model's most {m}");
        let within = |n, pairs, k| loops(n, k).one_pass_batch(pairs) <= LAVAPIPE_LOOP_ITERATIONS;
        assert!(within(1024, 1024, 16) && !within(2048, 2200, 16));
    }

    #[test]
    fn a_split_item_fits_its_budget() {
        let l = loops(4096, 16);
        let budget = usable(LAVAPIPE_LOOP_ITERATIONS);
        let p = l.max_chunk_pairs(false, budget);
        assert!(p > 0 && 2 * l.bins_pass() + p * l.one_pass_pair() <= budget && 2 * l.bins_pass() + (p + 1) * l.one_pass_pair() > budget);
        let p = l.max_chunk_pairs(true, budget);
        assert!(l.sum_rows(p) + l.bins_pass() <= budget && l.sum_rows(p + 1) + l.bins_pass() > budget);
        let c = l.max_partials(budget);
        assert!(l.peaks_of_partials(c) <= budget && l.peaks_of_partials(c + 1) > budget);
        // k near u64::MAX saturates instead of wrapping to a small count.
        assert_eq!(loops(4096, u64::MAX / 2).top_k(), u64::MAX);
        assert_eq!(l.max_chunk_pairs(false, u64::MAX), u64::MAX);
    }
}
