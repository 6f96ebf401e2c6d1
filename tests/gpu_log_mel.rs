//! The fused log-mel op's GPU kernels for real: the WGSL kernel's SPIR-V
//! through wgpu on Vulkan (lavapipe in CI) against the op's reference
//! (`runtime::log_mel::reference`, rustfft), within 1e-4 absolute (the
//! output is a log), over FFT lengths that are and are not powers of two,
//! mel counts, frame counts, layouts, with and without a window; lengths
//! with a prime factor above 5 refused by name; and the CUDA kernel where
//! a GPU is lent. Without the hardware each test prints a `SKIPPED` line.

mod common;
#[path = "cuda_emulation/run.rs"]
mod cuda_emulation;

use rand::{RngExt, SeedableRng};
use rlx_opt::fused::{LogMelAttrs, LogMelInput};
use rlx_opt::runtime::log_mel::reference;
use rlx_opt::runtime::{FusedKernel, Tensor};

/// One case's operands: frames (or a signal) of tones in noise, Whisper-like filters (HTK
/// triangles from 0 to 8 kHz at 16 kHz: small lengths and many mels leave
/// some filters empty), the window when the op has one.
fn operands(attrs: &LogMelAttrs, rows: usize, seed: u64) -> (Tensor, Tensor, Option<Tensor>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let shape = match attrs.input_layout {
        LogMelInput::Frames => vec![rows, attrs.frame_len as usize],
        // Two channels; `frames` frames each, `hop` apart, 3 samples to spare.
        LogMelInput::Signal => vec![2, attrs.signal_len(attrs.hop.unwrap(), attrs.frames.unwrap()).unwrap() as usize + 3],
    };
    // A tone of its own per row (per channel of a signal) over noise 20 dB
    // below: a spectrum of peaks and valleys, whose log a wrong bin changes.
    let len = *shape.last().unwrap();
    let mut data = Vec::with_capacity(shape.iter().product());
    for _ in 0..shape[0] {
        let omega = rng.random_range(0.05f32..3.1);
        data.extend((0..len).map(|t| (omega * t as f32).sin() + 0.1 * rng.random_range(-1.0f32..1.0)));
    }
    // The cases under a norm that scales (`Ortho`) run loud: each bin's
    // unscaled power overflows f32 there, its scaled power does not, so a
    // kernel that squared before scaling would give ∞ where RLX does not.
    if attrs.power_scale != 1.0 {
        data.iter_mut().for_each(|v| *v *= LOUD);
    }
    // Under RLX's `Sub(x, x)` plane (`inf_is_nan`), +∞ inside one frame
    // and −∞ at the last sample of the last frame: those frames' spectra
    // are NaN, so every mel of theirs RLX's floor (−1.5); the others as ever.
    if attrs.inf_is_nan {
        let (lines, len) = (shape[0], *shape.last().unwrap());
        let last = match attrs.input_layout {
            LogMelInput::Frames => len - 1,
            LogMelInput::Signal => len - 4,
        };
        data[(lines / 2) * len + attrs.frame_len as usize / 3] = f32::INFINITY;
        data[(lines - 1) * len + last] = f32::NEG_INFINITY;
        // And at sample 0 of row 0 (alone there where there are several
        // rows), which an FFT never multiplies by a twiddle: without a
        // window (w(0) = 0 makes it NaN) and in a transform of its own
        // (375, not packed), its mels come out ∞ unless the load makes the
        // sample NaN.
        data[0] = f32::INFINITY;
    }
    // At n_fft 512, 10 mels, 37 frames: a sample of 3e38 (above f32's
    // largest / 2 even windowed) in each of rows 1 to 8, at offsets from
    // 0.35 to 0.7 of the frame: those frames' power overflows to ∞, and the
    // packed split must not make ∞ − ∞ of it (where it did depends on the
    // offset).
    if attrs.n_fft == 512 && attrs.n_mels == 10 && attrs.input_layout == LogMelInput::Frames && shape[0] > 8 {
        let len = *shape.last().unwrap();
        for r in 1..=8 {
            data[r * len + len * (30 + 5 * r) / 100] = 3e38;
        }
    }
    // Samples whose FFT overflows f32 on the way (two of 3.4e38 side by
    // side in row 9, a tone of amplitude 3e38 in row 10): unscaled, the
    // transform met ∞ − ∞ and the frame was −1.5; the definition's power is
    // +∞, and every kernel transforms at its power-of-two scale
    // (`LogMelAttrs::transform_scale`).
    if attrs.input_layout == LogMelInput::Frames && shape[0] > 10 {
        let len = *shape.last().unwrap();
        data[9 * len + 10..9 * len + 12].fill(3.4e38);
        data[10 * len..11 * len].iter_mut().enumerate().for_each(|(t, v)| *v = 3e38 * (0.7 * t as f32 + 0.1).sin());
        // And row 11: a tone on bin 2, whose power no neighbour shares.
        if shape[0] > 11 {
            let n = attrs.n_fft as f32;
            data[11 * len..12 * len].iter_mut().enumerate().for_each(|(t, v)| *v = 3e38 * (std::f32::consts::TAU * 2.0 * t as f32 / n).cos());
        }
    }
    let input = Tensor::new(shape, data);
    let (n_fft, mels) = (attrs.n_fft as usize, attrs.n_mels as usize);
    let filters = Tensor::new(vec![mels, n_fft / 2 + 1], rlx_ir::filterbank::mel_filterbank(16000.0, n_fft, mels, 0.0, 8000.0));
    let window = attrs.window.then(|| {
        let len = attrs.frame_len as usize;
        Tensor::new(vec![len], (0..len).map(|t| 0.5 - 0.5 * (std::f32::consts::TAU * t as f32 / len as f32).cos()).collect())
    });
    (input, filters, window)
}

/// The gain of the loud cases: a tone's bin at n_fft 400 is about 6e19
/// unscaled (its square past f32's 3.4e38), 3e18 under `Ortho` (9e36).
const LOUD: f32 = 3e17;

/// Within 1e-4 absolute; returns the largest difference.
fn assert_close(name: &str, want: &Tensor, got: &Tensor) -> f32 {
    assert_eq!(want.shape, got.shape, "{name}");
    let mut worst = 0f32;
    for (j, (a, b)) in want.data.iter().zip(&got.data).enumerate() {
        // Equal infinities are equal (their difference is NaN).
        assert!(a == b || (a - b).abs() <= 1e-4, "{name}: element {j} (row {}, mel {}): reference {a}, gpu {b}", j / want.shape.last().unwrap(), j % want.shape.last().unwrap());
        if a != b {
            worst = worst.max((a - b).abs());
        }
    }
    worst
}

/// Every case: n_fft (powers of two and not), mels, frames; the window
/// and layouts in rotation, so each length meets both of each.
fn cases() -> Vec<(String, LogMelAttrs, usize)> {
    let mut out = Vec::new();
    let mut i = 0usize;
    // 375 and 90 are odd and even lengths whose halves have no 2 (a full
    // complex FFT of 375 = 3·5·5·5; 90 packed into 45 = 3·3·5).
    for n_fft in [64u64, 128, 256, 400, 512, 1024, 160, 1000, 375, 90] {
        for mels in [10u64, 40, 80, 128] {
            for rows in [1usize, 37] {
                i += 1;
                let window = i.is_multiple_of(2);
                let signal = i.is_multiple_of(3);
                // RLX's `Sub(x, x)` plane, ±∞ in the input (see `operands`):
                // every length, both layouts, with a window and without.
                let inf_is_nan = i % 5 == 2;
                // A frame shorter than the FFT (zero padding) in every fourth case.
                let frame_len = if i % 4 == 1 { n_fft * 3 / 4 } else { n_fft };
                let attrs = match signal {
                    false => LogMelAttrs { window, frame_len, inf_is_nan, ..LogMelAttrs::frames(n_fft, mels) },
                    true => LogMelAttrs {
                        input_layout: LogMelInput::Signal,
                        hop: Some(n_fft / 4),
                        frames: Some(rows as u64),
                        window,
                        frame_len,
                        inf_is_nan,
                        ..LogMelAttrs::frames(n_fft, mels)
                    },
                };
                let layout = if signal { "signal" } else { "frames" };
                let infinities = if inf_is_nan { " ±inf" } else { "" };
                out.push((format!("n_fft {n_fft} mels {mels} rows {rows} {layout} window {window} frame_len {frame_len}{infinities}"), attrs, rows));
            }
        }
    }
    // Whisper's clip (3,000 frames of 400 at 80 and 128 mels), and a long power-of-two one.
    out.push(("whisper 3000 x 400, 80 mels".into(), LogMelAttrs::frames(400, 80), 3000));
    out.push(("375, 40 mels, 37 rows, ±inf at sample 0 of row 0".into(), LogMelAttrs { inf_is_nan: true, ..LogMelAttrs::frames(375, 40) }, 37));
    out.push(("whisper 3000 x 400, 128 mels, window, ±inf".into(), LogMelAttrs { window: true, inf_is_nan: true, ..LogMelAttrs::frames(400, 128) }, 3000));
    out.push(("3000 x 512, 64 mels".into(), LogMelAttrs::frames(512, 64), 3000));
    // `Ortho` (power scaled by 1/n_fft), loud: packed (400) and full (375).
    out.push(("ortho 400, loud".into(), LogMelAttrs { power_scale: 1.0 / 400.0, ..LogMelAttrs::frames(400, 80) }, 37));
    out.push(("ortho 375, window, loud".into(), LogMelAttrs { power_scale: 1.0 / 375.0, window: true, ..LogMelAttrs::frames(375, 40) }, 37));
    out
}

#[test]
fn wgpu_log_mel_matches_the_reference() {
    let kernels = match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
        Ok(k) => k,
        Err(reason) => return common::skip("wgpu_log_mel_matches_the_reference", &reason.to_string(), true),
    };
    println!("wgpu adapter: {}", kernels.adapter);
    let cases = cases();
    let mut worst = 0f32;
    for (seed, (name, attrs, rows)) in cases.iter().enumerate() {
        let (input, filters, window) = operands(attrs, *rows, seed as u64);
        let want = reference(attrs, &input, &filters, window.as_ref()).unwrap();
        let got = kernels.run_log_mel(attrs, &input, &filters, window.as_ref()).unwrap_or_else(|e| panic!("{name}: {e}"));
        worst = worst.max(assert_close(name, &want, &got));
    }
    println!("{} log-mel cases matched the reference on wgpu, largest difference {worst:e}", cases.len());
}

/// Each frame has a transform of its own: a silent frame between loud ones
/// (Whisper pads every clip with zeros, so speech beside silence is the
/// common case) gives exactly RLX's floor, log10(1e-10) → (−10 + 4) / 4 =
/// −1.5, for every mel. An odd frame count, so that a kernel pairing frames
/// would put the silent frame 2 in one transform with the loud frame 3.
#[test]
fn wgpu_log_mel_silent_frame_between_loud_ones_is_exactly_the_floor() {
    let kernels = match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
        Ok(k) => k,
        Err(reason) => return common::skip("wgpu_log_mel_silent_frame_between_loud_ones_is_exactly_the_floor", &reason.to_string(), true),
    };
    for window in [false, true] {
        let attrs = LogMelAttrs { window, ..LogMelAttrs::frames(400, 80) };
        let (mut input, filters, win) = operands(&attrs, 5, 7);
        // Loud frames: tones of amplitude ~1000.
        for v in input.data.iter_mut() {
            *v *= 1000.0;
        }
        input.data[2 * 400..3 * 400].fill(0.0);
        let got = kernels.run_log_mel(&attrs, &input, &filters, win.as_ref()).unwrap();
        for m in 0..80 {
            assert_eq!(got.data[2 * 80 + m], -1.5, "window {window}: silent frame 2, mel {m}: {:?}", &got.data[2 * 80..3 * 80]);
        }
        let want = reference(&attrs, &input, &filters, win.as_ref()).unwrap();
        assert_close(&format!("loud frames, window {window}"), &want, &got);
    }
}

/// A NaN weight outside its filter's non-zero band still bounds the band,
/// as on the CPU (`mel_bands`) and in the unfused chain: the mel is NaN,
/// so the frame is floored. WGSL may assume no NaNs, and lavapipe's
/// `NaN != 0.0` was false: the band skipped it and the mel was finite (an
/// adversarial run: 1.6613 where the reference gives −0.0910; here, with
/// the old kernel, 1.1527 where it gives 0.1216).
#[test]
fn wgpu_log_mel_nan_weight_outside_a_band_counts_as_on_the_cpu() {
    let kernels = match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
        Ok(k) => k,
        Err(reason) => return common::skip("wgpu_log_mel_nan_weight_outside_a_band_counts_as_on_the_cpu", &reason.to_string(), true),
    };
    let attrs = LogMelAttrs::frames(400, 16);
    let (input, mut filters, _) = operands(&attrs, 3, 5);
    let bins = 201;
    let row = &filters.data[bins..2 * bins];
    let last = row.iter().rposition(|w| *w != 0.0).expect("filter 1 has a band");
    assert!(last + 3 < bins, "the NaN stays in filter 1's row");
    filters.data[bins + last + 3] = f32::NAN;
    let got = kernels.run_log_mel(&attrs, &input, &filters, None).unwrap();
    let want = reference(&attrs, &input, &filters, None).unwrap();
    assert_close("NaN outside filter 1's band", &want, &got);
}

/// A length with a prime factor above 5 has no GPU kernel: refused with
/// the factor named, never a wrong answer; no rows is an empty result.
#[test]
fn wgpu_log_mel_refuses_lengths_with_a_factor_above_5() {
    let kernels = match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
        Ok(k) => k,
        Err(reason) => return common::skip("wgpu_log_mel_refuses_lengths_with_a_factor_above_5", &reason.to_string(), true),
    };
    for (n_fft, factor) in [(98u64, 7u64), (202, 101)] {
        let attrs = LogMelAttrs::frames(n_fft, 10);
        let (input, filters, _) = operands(&attrs, 4, 1);
        let e = kernels.run_log_mel(&attrs, &input, &filters, None).unwrap_err().to_string();
        assert!(e.contains(&format!("prime factor above 5 ({factor})")), "{e}");
    }
    let attrs = LogMelAttrs::frames(400, 80);
    let (_, filters, _) = operands(&attrs, 1, 1);
    let empty = kernels.run_log_mel(&attrs, &Tensor::zeros(vec![0, 400]), &filters, None).unwrap();
    assert_eq!(empty.shape, [0, 80]);
    // rlx-run: an op fused for the CPU runs there where the GPU takes no
    // such length (it was refused), one lowered to the GPU is still refused.
    let dispatch = rlx_opt::runtime::DispatchByLowering::new(Box::new(kernels));
    let cpu = LogMelAttrs { lowering: Some(rlx_opt::fused::Lowering::Cpu), ..LogMelAttrs::frames(98, 10) };
    let (input, filters, _) = operands(&cpu, 4, 1);
    let got = dispatch.run_log_mel(&cpu, &input, &filters, None).unwrap();
    assert_eq!(got.data, rlx_opt::runtime::CpuKernel.run_log_mel(&cpu, &input, &filters, None).unwrap().data);
    let gpu = LogMelAttrs { lowering: Some(rlx_opt::fused::Lowering::Spirv), ..cpu };
    assert!(dispatch.run_log_mel(&gpu, &input, &filters, None).unwrap_err().to_string().contains("prime factor above 5 (7)"));
}

/// The CUDA kernel in both forms, a warp per frame (the default: it
/// matched on an H200) and a block per frame
/// (`RLX_OPT_CUDA_LOG_MEL_WARPS=0`), run on the CPU
/// (`tests/cuda_emulation`: each CUDA thread a fiber switched at every
/// barrier and shuffle) against the reference: every length of the cases
/// at 37 rows (layouts, windows and short frames in rotation) and
/// Whisper's clip, with the warp reductions of sm_80 and the shuffles of
/// older GPUs in turn.
#[test]
fn cuda_log_mel_emulated_on_the_cpu_matches_the_reference() {
    use cuda_emulation::{Buffer, Call};
    use rlx_opt::analysis::Target;
    use rlx_opt::analysis::plan::DeviceLimits;
    use rlx_opt::lower::log_mel::{LogMelBuffer, LogMelEntry, cuda_source, launches, specialize};
    let mut emulator = match cuda_emulation::compiler() {
        Ok(gxx) => cuda_emulation::Emulator::new(gxx, "log-mel"),
        Err(cuda_emulation::NoCompiler(reason)) => return common::skip("cuda_log_mel_emulated_on_the_cpu_matches_the_reference", &reason, true),
    };
    let mut warp_forms = 0;
    for (seed, (name, attrs, rows)) in cases().iter().enumerate() {
        // (and the case of samples near f32's largest: see `operands`)
        let huge = *rows == 37 && attrs.n_fft == 512 && attrs.n_mels == 10 && attrs.input_layout == LogMelInput::Frames;
        if !(*rows == 3000 && attrs.n_mels == 80 || *rows == 37 && matches!(attrs.n_mels, 40 | 128) || huge) {
            continue;
        }
        let (input, filters, window) = operands(attrs, *rows, seed as u64);
        let want = reference(attrs, &input, &filters, window.as_ref()).unwrap();
        for warps in [false, true] {
            let limits = DeviceLimits { log_mel_warps: warps, ..DeviceLimits::assumed(Target::Cuda) };
            let spec = specialize(attrs, &input.shape, Target::Cuda, &limits).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(spec.plan.warps, warps, "{name}: the warp form is planned where asked, up to n_fft 2048");
            warp_forms += usize::from(warps);
            let source = cuda_source(&spec).unwrap();
            let buffer = |b: LogMelBuffer, element, len, input: Option<Vec<f32>>| Buffer { name: b.name(), element, len, input };
            let buffers = [
                buffer(LogMelBuffer::Frames, "float", LogMelBuffer::Frames.len(&spec), Some(input.data.clone())),
                buffer(LogMelBuffer::Window, "float", LogMelBuffer::Window.len(&spec), Some(window.as_ref().map_or_else(|| vec![1.0], |w| w.data.clone()))),
                buffer(LogMelBuffer::Filters, "float", LogMelBuffer::Filters.len(&spec), Some(filters.data.clone())),
                buffer(LogMelBuffer::Bands, "uint2", spec.mels, None),
                buffer(LogMelBuffer::Mels, "float", LogMelBuffer::Mels.len(&spec), None),
            ];
            let calls: Vec<Call> = launches(&spec)
                .iter()
                .map(|l| Call { entry: l.entry.name().to_string(), grid: l.grid(), threads: l.threads, args: l.entry.buffers().iter().map(|b| b.name().to_string()).collect() })
                .collect();
            assert_eq!(calls.iter().map(|c| c.entry.as_str()).collect::<Vec<_>>(), [LogMelEntry::MelBands.name(), LogMelEntry::LogMel.name()]);
            let arch = if seed % 2 == 0 { 800 } else { 700 };
            let what = format!("{name}, {} form, emulated for sm_{}", if warps { "warp" } else { "block" }, arch / 10);
            let got = emulator.run(&source, arch, &buffers, &calls, LogMelBuffer::Mels.name()).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_close(&what, &want, &Tensor::new(want.shape.clone(), got));
        }
    }
    assert!(warp_forms >= 10, "{warp_forms} cases ran the warp form");
}

#[test]
fn cuda_log_mel_matches_the_reference() {
    let kernels = match rlx_opt::runtime::cuda_kernel::CudaKernels::new() {
        Ok(k) => k,
        // CI has NVRTC but no NVIDIA GPU: the skip shows, and does not fail there.
        Err(reason) => return common::skip("cuda_log_mel_matches_the_reference", &reason.to_string(), false),
    };
    // The warp form by default (n_fft up to 2048), the block form with
    // RLX_OPT_CUDA_LOG_MEL_WARPS=0.
    println!("CUDA device: {} ({}); log-mel warp form asked: {}", kernels.device, kernels.arch, kernels.limits().log_mel_warps);
    for (seed, (name, attrs, rows)) in cases().iter().enumerate() {
        let (input, filters, window) = operands(attrs, *rows, seed as u64);
        let want = reference(attrs, &input, &filters, window.as_ref()).unwrap();
        let got = kernels.run_log_mel(attrs, &input, &filters, window.as_ref()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_close(name, &want, &got);
    }
}

/// The CUDA kernel's entry points in RLX's signature (`rlx_mel_bands`,
/// `rlx_log_mel`: one arena, operands by offset, RLX's 1-D grid), which
/// rlx-ext registers with RLX's CUDA backend (by default; they ran in RLX on
/// an H200), emulated on the CPU against the reference as
/// rlx-ext's two ops launch them: the bands op (operand 0 the filters,
/// the bands its result, f32 pairs), then the log-mel op (the frames, the
/// filters, the bands, the window when there is one). The tensors sit in the
/// arena at 16-byte boundaries, as RLX places them, in an order unlike the
/// operands' (the result first) and with unused values between them, so
/// that an operand read at another's offset, or past its length, shows.
/// Both forms in turn, and sm_80's warp reductions and older GPUs'
/// shuffles: every length at 37 rows (windowed) and at one row (not),
/// and Whisper's clip.
#[test]
fn cuda_log_mel_in_rlx_s_signature_emulated_matches_the_reference() {
    use cuda_emulation::{Arena, Buffer, Call};
    use rlx_opt::analysis::Target;
    use rlx_opt::analysis::plan::DeviceLimits;
    use rlx_opt::lower::Bindings;
    use rlx_opt::lower::log_mel::{LogMelBuffer, LogMelEntry, cuda_source_with, launches, rlx_entry, specialize};
    let mut emulator = match cuda_emulation::compiler() {
        Ok(gxx) => cuda_emulation::Emulator::new(gxx, "log-mel-rlx"),
        Err(cuda_emulation::NoCompiler(reason)) => return common::skip("cuda_log_mel_in_rlx_s_signature_emulated_matches_the_reference", &reason, true),
    };
    let (mut ran, mut windowed, mut warp_forms) = (0, 0, 0);
    for (seed, (name, attrs, rows)) in cases().iter().enumerate() {
        if !(*rows == 3000 && attrs.n_mels == 80 || *rows == 37 && attrs.n_mels == 40 || *rows == 1 && attrs.n_mels == 10) {
            continue;
        }
        let (input, filters, window) = operands(attrs, *rows, seed as u64);
        let want = reference(attrs, &input, &filters, window.as_ref()).unwrap();
        // The forms and archs in turn over lengths, both with and without a window.
        let warps = (ran / 2) % 2 == 1;
        let limits = DeviceLimits { log_mel_warps: warps, ..DeviceLimits::assumed(Target::Cuda) };
        let spec = specialize(attrs, &input.shape, Target::Cuda, &limits).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The arena: the result, the window, the bands, the filters, the
        // frames (`cuda_emulation::Arena`: 16-byte boundaries, sentinels between).
        let mut arena = Arena::default();
        let mels = arena.place(&[], LogMelBuffer::Mels.len(&spec));
        let window_at = window.as_ref().map(|w| arena.place(&w.data, w.data.len() as u64));
        let bands = arena.place(&[], LogMelBuffer::Bands.len(&spec));
        let filters_at = arena.place(&filters.data, filters.data.len() as u64);
        let frames = arena.place(&input.data, input.data.len() as u64);
        arena.values.extend([cuda_emulation::SENTINEL; 7]);
        let mut operands = vec![frames, filters_at, bands];
        operands.extend(window_at);
        let calls: Vec<Call> = launches(&spec)
            .iter()
            .map(|l| {
                let args = match l.entry {
                    LogMelEntry::MelBands => Arena::args(bands, &[filters_at], [0; 4]),
                    LogMelEntry::LogMel => Arena::args(mels, &operands, [0; 4]),
                };
                Call { entry: rlx_entry(l.entry), grid: (u32::try_from(l.groups).unwrap(), 1), threads: l.threads, args }
            })
            .collect();
        let source = cuda_source_with(&spec, Bindings::RlxArena { stage: 0 }).unwrap();
        let buffers = [Buffer { name: "arena", element: "float", len: arena.values.len() as u64, input: Some(arena.values.clone()) }];
        let arch = if (ran / 4) % 2 == 0 { 800 } else { 700 };
        let what = format!("{name}, {} form in RLX's signature, emulated for sm_{}", if warps { "warp" } else { "block" }, arch / 10);
        let got = emulator.run(&source, arch, &buffers, &calls, "arena").unwrap_or_else(|e| panic!("{what}: {e}"));
        let (off, len) = (mels.0 as usize, mels.1 as usize);
        assert_close(&what, &want, &Tensor::new(want.shape.clone(), got[off..off + len].to_vec()));
        // Nothing but the result and the bands was written.
        assert_eq!(arena.changed_outside(&got, &[mels, bands]), None, "{what}");
        println!("{what}: matched");
        ran += 1;
        windowed += usize::from(window.is_some());
        warp_forms += usize::from(warps);
    }
    assert!(ran >= 8 && windowed >= 2 && windowed < ran && warp_forms >= 2 && warp_forms < ran, "{ran} cases ran, {windowed} with a window, {warp_forms} in the warp form");
}
