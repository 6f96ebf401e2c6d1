//! `rlx-trace diff` of two traces (the input split at its first NUL byte):
//! whatever loads compares without panicking, in time linear in the traces
//! (streams too different to align are listed, not diffed), with finite
//! figures, and renders as text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::trace::classify::Classifier;
use rlx_opt::trace::{diff, load::load, render_diff};

fuzz_target!(|data: &[u8]| {
    let (a, b) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, data),
    };
    let (Ok(ta), Ok(tb)) = (load(a), load(b)) else { return };
    let report = diff(["a".into(), "b".into()], &ta, &tb, &Classifier::default_set());
    for f in &report.findings {
        assert!(f.fused_time_us.is_finite() && f.unfused_time_us.is_finite() && f.confidence.is_finite(), "{f:?}");
    }
    let _ = render_diff(&report);
});
