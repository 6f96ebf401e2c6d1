//! Device profiles (`fuse-welch-peaks{profile=…}`, `rlx-run --calibrate`):
//! any JSON is refused or checked, and a checked profile prices a set of
//! Welch-peaks and log-mel chain shapes with finite predictions only (a non-finite one is dropped
//! with a reason, never picked), in a reason of bounded length. Nothing
//! panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::analysis::IoProfile;
use rlx_opt::analysis::device_profile::DeviceProfile;
use rlx_opt::analysis::picker::{ProfileChoice, pick_log_mel_with_profile, pick_with_profile};
use rlx_opt::fused::{LogMelAttrs, WelchPeaksAttrs};
use rlx_opt::ir::{DType, TensorType};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(profile) = serde_json::from_str::<DeviceProfile>(text.strip_prefix('\u{feff}').unwrap_or(text)) else { return };
    if profile.check().is_err() {
        return;
    }
    let chain = IoProfile { kernel_launches: 6, sync_points: 0, host_output_bytes: 1 << 10, device_traffic_bytes: 1 << 24 };
    for (batch, segments, n_fft, k) in [(1, 1, 16, 1), (64, 8, 256, 16), (1, 100_000, 64, 4), (8192, 8, 4096, 2049)] {
        let a = WelchPeaksAttrs::rlx(n_fft, segments, k);
        let input = TensorType::new(&[batch * segments, 2 * n_fft], DType::F32);
        for native in [false, true] {
            pick_with_profile(&profile, &a, &input, &chain, native).iter().for_each(well_formed);
        }
    }
    // The log-mel op (its own line, RLX's unfused one, a host's), frames
    // from one to a long batch, FFT lengths measured or far from them.
    for (frames, n_fft, mels) in [(1, 16, 1), (3000, 400, 80), (1 << 20, 4096, 128), (37, 98, 10)] {
        let a = LogMelAttrs::frames(n_fft, mels);
        let input = TensorType::new(&[frames, n_fft], DType::F32);
        for native in [false, true] {
            pick_log_mel_with_profile(&profile, &a, &input, &chain, native).iter().for_each(well_formed);
        }
    }
});

/// Only finite predictions kept, and a reason of bounded length that names no NaN or ∞.
fn well_formed(choice: &ProfileChoice) {
    assert!(choice.predictions.iter().all(|p| p.ns.is_finite()), "a non-finite prediction was kept");
    let reason = choice.reason();
    assert!(reason.len() < 4096, "a reason of {} bytes", reason.len());
    assert!(!reason.contains("NaN") && !reason.contains(" inf ms"), "{reason}");
}
