//! What the fused op's kernels and the installed pass did while a caller
//! watched: each call of a CPU kernel (for traces, and to see that an op was
//! hosted on the CPU), each use of a native GPU kernel by RLX's backends (to
//! see that a `Session` ran an op on the GPU), and each fusion report and
//! pass failure (which the process-wide queues would give to whoever takes
//! them first). Kernels are called on any thread, by
//! RLX, with no handle of the caller's: a [`Recording`] sees every call in
//! the process while it lives. Recordings are independent: each caller (a
//! test, rlx-run's trace, calibration) holds its own, and none resets or
//! replaces another's.

use crate::error::ExtError;
use crate::fusion_report::FusionReport;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// One call of the fused op's CPU kernel (or of a step of a multi-pass
/// plan, run on the CPU).
#[derive(Debug, Clone)]
pub struct KernelCall {
    /// The op's name as RLX called the kernel (`rlx_opt.welch_peaks`, or a
    /// specialisation's, `rlx_opt.welch_peaks.wgpu.<key>.load`).
    pub name: String,
    /// When the call began.
    pub start: Instant,
    /// How long it took.
    pub duration: Duration,
}

/// What one recording has seen so far.
#[derive(Default)]
struct Seen {
    calls: Mutex<Vec<KernelCall>>,
    native_gpu_uses: AtomicUsize,
    reports: Mutex<Vec<FusionReport>>,
    failures: Mutex<Vec<String>>,
}

/// The recordings alive now (a dropped one's entry is removed by its drop,
/// or skipped once its last handle is gone).
static LIVE: Mutex<Vec<Weak<Seen>>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<Weak<Seen>>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every call of the fused op's CPU kernels and every use of its native GPU
/// kernels in this process, on any thread, from [`Recording::start`] until
/// it drops. Each caller holds its own: recordings are independent, and
/// none resets or replaces another's (see [what is
/// process-wide](crate#what-is-process-wide)).
#[must_use = "nothing is recorded once the recording drops"]
pub struct Recording {
    seen: Arc<Seen>,
}

impl Recording {
    /// Start recording (what happened before is not seen).
    pub fn start() -> Recording {
        let seen = Arc::new(Seen::default());
        live().push(Arc::downgrade(&seen));
        Recording { seen }
    }

    /// The CPU kernel calls seen since the start or the last `take`, oldest
    /// first; recording goes on.
    pub fn take(&self) -> Vec<KernelCall> {
        std::mem::take(&mut *self.seen.calls.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// How many times RLX has used a native GPU kernel of the fused op since
    /// the start: wgpu counts an op when a `Session` compiles it to a
    /// dispatch of its WGSL kernel (RLX asks for the grid then, and replays
    /// that dispatch on every run); CUDA counts each launch (RLX asks for
    /// the kernel's extras at each). An op RLX hosts on the CPU instead runs
    /// the CPU kernel: a [`KernelCall`], not counted here.
    pub fn native_gpu_uses(&self) -> usize {
        self.seen.native_gpu_uses.load(Ordering::SeqCst)
    }
}

impl Recording {
    /// The installed pass's reports (as [`take_fusion_reports`](crate::take_fusion_reports)
    /// gives them) since the start or the last call, oldest first: this
    /// recording's own, whoever else takes the process's queue.
    pub fn take_fusion_reports(&self) -> Vec<FusionReport> {
        std::mem::take(&mut *self.seen.reports.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Why the installed pass left graphs unfused (the messages of
    /// [`take_pass_failures`](crate::take_pass_failures)' errors) since the
    /// start or the last call, oldest first: this recording's own.
    pub fn take_pass_failures(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.failures.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        live().retain(|w| w.upgrade().is_some_and(|s| !Arc::ptr_eq(&s, &self.seen)));
    }
}

/// The recordings alive now.
fn watching() -> Vec<Arc<Seen>> {
    live().iter().filter_map(Weak::upgrade).collect()
}

/// A CPU kernel's call, begun at `start`, for every live recording.
pub(crate) fn record_kernel(name: &str, start: Instant) {
    let watching = watching();
    if watching.is_empty() {
        return;
    }
    let call = KernelCall { name: name.to_string(), start, duration: start.elapsed() };
    for seen in watching {
        seen.calls.lock().unwrap_or_else(|p| p.into_inner()).push(call.clone());
    }
}

/// A native GPU kernel's use, for every live recording.
pub(crate) fn count_native_gpu_use() {
    for seen in watching() {
        seen.native_gpu_uses.fetch_add(1, Ordering::SeqCst);
    }
}

/// A fusion report of the installed pass, for every live recording.
pub(crate) fn record_fusion_report(report: &FusionReport) {
    for seen in watching() {
        seen.reports.lock().unwrap_or_else(|p| p.into_inner()).push(report.clone());
    }
}

/// A failure of the installed pass, for every live recording.
pub(crate) fn record_pass_failure(e: &ExtError) {
    for seen in watching() {
        seen.failures.lock().unwrap_or_else(|p| p.into_inner()).push(e.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two callers record at once: each sees every call made while it
    /// lives, and neither's `take` nor drop touches the other's.
    #[test]
    fn recordings_are_independent() {
        let first = Recording::start();
        record_kernel("a", Instant::now());
        let second = Recording::start();
        record_kernel("b", Instant::now());
        count_native_gpu_use();
        assert_eq!(first.take().iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(second.take().iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["b"]);
        assert_eq!((first.native_gpu_uses(), second.native_gpu_uses()), (1, 1));
        drop(first);
        record_kernel("c", Instant::now());
        assert_eq!(second.take().len(), 1);
    }
}
