//! Chrome traces: any bytes load or are refused, never panic; what loads
//! has finite, non-negative durations.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(trace) = rlx_opt::trace::load::load(data) {
        assert!(trace.kernels.iter().all(|k| k.dur.is_finite() && k.dur >= 0.0 && k.ts.is_finite()));
    }
});
