//! How the fused ops' CPU kernels run inside RLX: RLX calls a custom
//! kernel from the thread running the graph, which would otherwise block
//! while RLX's pool (sized by RLX, `RLX_WORKERS`; one worker on two cores)
//! does the work. That thread takes its share of the rows; the pool the
//! rest. Measured on 2 cores, the log-mel op ran on one of them without
//! this.

/// Rows of `row_len` values into `out` by `kernel(first_row, out, parallel)`:
/// the calling thread runs rows `0..share` itself (`parallel` false), the
/// pool the rest (`parallel` true), `share` a whole number of `granule`s
/// (the kernel's natural batch of rows). Called from a pool thread, or with
/// too few rows to share, the kernel gets all of them on the pool.
pub(crate) fn share_rows_with_caller(out: &mut [f32], row_len: usize, granule: usize, kernel: impl Fn(usize, &mut [f32], bool) + Sync) {
    let rows = out.len().checked_div(row_len).unwrap_or(0);
    let in_pool = rayon::current_thread_index().is_some();
    let share = rows / (rayon::current_num_threads() + 1) / granule.max(1) * granule.max(1);
    if in_pool || share == 0 {
        return kernel(0, out, true);
    }
    let (mine, theirs) = out.split_at_mut(share * row_len);
    rayon::in_place_scope(|scope| {
        scope.spawn(|_| kernel(share, theirs, true));
        kernel(0, mine, false);
    });
}
