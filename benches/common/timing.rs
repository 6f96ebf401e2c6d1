//! In-process timing shared by the benchmarks (included with `#[path]`,
//! as benches of two packages use it).

use std::time::Instant;

/// The median of `runs` timed calls of `f`, in milliseconds, after one
/// untimed call that warms caches, pools and pipelines.
pub fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
