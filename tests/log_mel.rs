//! `fuse-log-mel` keeps meaning: on generated RLX log-mel chains (frames,
//! window, padding, framing; filters constant or input; every FFT length
//! the issue names, powers of two or not), the unfused graph run by the
//! reference interpreter equals the fused graph run by the CPU kernel and
//! by the op's own definition, within 1e-4 absolute (the output is a log).
//! And the chains the pass must not fuse are left alone, with their reason.

mod common;

use common::{LogMelChain, log_mel_chain};
use rlx_ir::text;
use rlx_opt::format::rlx_text;
use rlx_opt::fusion_report::{Candidate, Decision, FusionCandidates};
use rlx_opt::ir::Graph;
use rlx_opt::pass::{PassContext, PassOptions, ReportFormat};
use rlx_opt::passes::fuse_log_mel;
use rlx_opt::runtime::{CpuKernel, Reference, Tensor, random_inputs, run};
use rlx_opt::verify::verify;

const TOL: f32 = 1e-4;

/// The graph after `fuse-log-mel` with `options`, and the report's candidates.
fn fuse(graph: &Graph, options: &str) -> (Graph, Vec<Candidate>) {
    let mut g = graph.clone();
    let options = PassOptions::parse(options, &fuse_log_mel::INFO).unwrap();
    let pass = (fuse_log_mel::INFO.create)(&options).unwrap();
    let mut cx = PassContext::new(rlx_opt::analysis::Target::Cpu, ReportFormat::Text);
    cx.request::<FusionCandidates>();
    pass.run(&mut g, &mut cx).unwrap();
    verify(&g).unwrap();
    let report = cx.take::<FusionCandidates>().0;
    (g, report)
}

fn fused_ops(g: &Graph) -> usize {
    g.nodes().iter().filter(|n| n.op.log_mel().is_some()).count()
}

fn assert_close(name: &str, want: &[Tensor], got: &[Tensor]) {
    assert_eq!(want.len(), got.len(), "{name}: output count");
    for (w, g) in want.iter().zip(got) {
        assert_eq!(w.shape, g.shape, "{name}: shape");
        // A NaN on either side fails: `|Δ| ≤ TOL` is false for it (a fold
        // for the largest |Δ| would pass it over).
        for (i, (a, b)) in w.data.iter().zip(&g.data).enumerate() {
            // Equal infinities are equal (their difference is NaN).
            assert!(a == b || (a - b).abs() <= TOL, "{name}: element {i}: unfused {a}, fused {b} (|Δ| {})", (a - b).abs());
        }
    }
}

/// Print the chain as RLX does, read it back, fuse it, and run both ways.
fn check(name: &str, chain: LogMelChain) {
    let graph = rlx_text::parse(&text::print(&log_mel_chain(chain))).unwrap();
    let (fused, _) = fuse(&graph, "target=cpu");
    assert_eq!(fused_ops(&fused), 1, "{name}: not fused:\n{}", rlx_text::print(&fused));
    let inputs = inputs_of(&graph, chain);
    let want = run(&graph, &inputs, &Reference).unwrap_or_else(|e| panic!("{name}: unfused: {e}"));
    let got = run(&fused, &inputs, &CpuKernel).unwrap_or_else(|e| panic!("{name}: fused: {e}"));
    assert_close(name, &want, &got);
    let definition = run(&fused, &inputs, &Reference).unwrap();
    assert_close(&format!("{name} (definition)"), &want, &definition);
}

/// Random frames and, where the filters are an input, rlx-ir's filterbank:
/// random signed weights would make mel sums cancel to near zero, where a
/// log turns FFT rounding into any difference at all.
fn inputs_of(graph: &Graph, chain: LogMelChain) -> std::collections::HashMap<String, Tensor> {
    let mut inputs = random_inputs(graph, chain.frames as u64).unwrap();
    if let Some(filters) = inputs.get_mut("mel_filters") {
        filters.data = rlx_ir::filterbank::mel_filterbank(16000.0, chain.n_fft, chain.n_mels, 0.0, 8000.0);
    }
    inputs
}

#[test]
fn fused_equals_unfused_over_lengths_mels_and_filters() {
    for n_fft in [64, 128, 256, 400, 512, 1024] {
        for n_mels in [10, 40, 80, 128] {
            for frames in [1, 37] {
                for const_filters in [true, false] {
                    let chain = LogMelChain { const_filters, ..LogMelChain::new(frames, n_fft, n_mels) };
                    check(&format!("n_fft {n_fft}, {n_mels} mels, {frames} frames, const filters {const_filters}"), chain);
                }
            }
        }
    }
}

#[test]
fn a_whisper_clip_of_3000_frames() {
    for (n_fft, n_mels) in [(400, 80), (400, 128), (512, 64)] {
        check(&format!("3000 frames, n_fft {n_fft}, {n_mels} mels"), LogMelChain { const_filters: false, ..LogMelChain::new(3000, n_fft, n_mels) });
    }
}

#[test]
fn windows_padding_framing_and_norms_fuse_too() {
    use rlx_ir::fft::FftNorm;
    let base = LogMelChain::new(9, 400, 40);
    check("hann window", LogMelChain { window: true, ..base });
    check("zero padded 300 → 400", LogMelChain { frame_len: 300, ..base });
    check("padded and windowed", LogMelChain { frame_len: 320, window: true, n_fft: 512, ..base });
    check("framed at hop 160", LogMelChain { hop: Some(160), ..base });
    check("framed and windowed", LogMelChain { hop: Some(100), window: true, const_filters: false, ..base });
    check("ortho norm", LogMelChain { norm: FftNorm::Ortho, ..base });
    check("odd frame count, framed", LogMelChain { frames: 1, hop: Some(160), ..base });
}

/// Loud frames under `Ortho` (power scaled by 1/n_fft): each bin's
/// unscaled power overflows f32, its scaled power (what the unfused chain
/// squares: RLX scales the spectrum, then squares it) does not. The fused
/// op, run by the CPU kernel (the packed transform at 400, the full one at
/// 375) and by its definition, gives the unfused chain's finite values (it
/// squared first, then scaled: ∞ for every mel).
#[test]
fn loud_frames_under_a_scaling_norm_stay_finite_as_unfused() {
    use rlx_ir::fft::FftNorm;
    // Uniform noise of this amplitude: a bin's power about 2e39 unscaled at
    // 400 points, 5e36 scaled.
    const LOUD: f32 = 4e18;
    for (n_fft, window) in [(400, false), (375, true)] {
        let name = format!("ortho, n_fft {n_fft}, window {window}, loud");
        let chain = LogMelChain { norm: FftNorm::Ortho, window, ..LogMelChain::new(9, n_fft, 40) };
        let graph = rlx_text::parse(&text::print(&log_mel_chain(chain))).unwrap();
        let (fused, _) = fuse(&graph, "target=cpu");
        assert_eq!(fused_ops(&fused), 1, "{name}: not fused");
        let mut inputs = inputs_of(&graph, chain);
        inputs.get_mut("frames").expect("the frames input").data.iter_mut().for_each(|v| *v *= LOUD);
        let want = run(&graph, &inputs, &Reference).unwrap_or_else(|e| panic!("{name}: unfused: {e}"));
        assert!(want[0].data.iter().all(|v| v.is_finite()), "{name}: the unfused chain's values are finite");
        let got = run(&fused, &inputs, &CpuKernel).unwrap_or_else(|e| panic!("{name}: fused: {e}"));
        assert_close(&name, &want, &got);
        let definition = run(&fused, &inputs, &Reference).unwrap();
        assert_close(&format!("{name} (definition)"), &want, &definition);
    }
}

/// RLX's imaginary plane `Sub(x, x)` is NaN where a windowed sample is
/// ±∞, so that frame's spectrum is NaN and each of its mels RLX's floor,
/// (log10(1e-10) + 4) / 4 = −1.5; the other frames keep their values. The
/// fused op (`inf_is_nan`, set by the pass for that plane) gives the same
/// through the CPU kernel (packed at 400 and 512, the full transform at
/// 375) and its definition; it gave ∞ there before.
#[test]
fn a_frame_holding_an_infinity_is_the_floor_as_unfused() {
    let base = LogMelChain::new(9, 400, 40);
    for (name, chain) in [
        ("frames, n_fft 400", base),
        ("window, n_fft 375", LogMelChain { window: true, ..LogMelChain::new(9, 375, 40) }),
        // No window at 375 (a transform of its own, not packed): +∞ at
        // frame 2's sample 0 is multiplied by no twiddle, so without the
        // rule every power of that frame would be ∞, not NaN.
        ("n_fft 375, +∞ at a frame's first sample", LogMelChain::new(9, 375, 40)),
        ("framed at hop 160, padded 320 → 512, window", LogMelChain { hop: Some(160), frame_len: 320, n_fft: 512, window: true, ..base }),
    ] {
        let graph = rlx_text::parse(&text::print(&log_mel_chain(chain))).unwrap();
        let (fused, _) = fuse(&graph, "target=cpu");
        let attrs = fused.nodes().iter().find_map(|n| n.op.log_mel()).unwrap_or_else(|| panic!("{name}: not fused")).unwrap();
        assert!(attrs.inf_is_nan, "{name}: the `Sub(x, x)` plane sets inf_is_nan");
        let mut inputs = inputs_of(&graph, chain);
        let (input, len) = match chain.hop {
            None => ("frames", chain.frame_len),
            Some(_) => ("signal", 1),
        };
        // Frames 2 (at sample 100, or 0 without a window, whose w(0) = 0
        // makes ∞·0 NaN anyway) and 7 (at its last sample); for the signal
        // (frames overlap), a sample of frame 0 alone and the last sample
        // of the last frame.
        let first = if chain.window { 100 } else { 0 };
        let (at, hit) = match chain.hop {
            None => ([2 * len + first, 7 * len + len - 1], [2, 7]),
            Some(hop) => ([50, (chain.frames - 1) * hop + chain.frame_len - 1], [0, chain.frames - 1]),
        };
        let data = &mut inputs.get_mut(input).expect("the frames input").data;
        data[at[0]] = f32::INFINITY;
        data[at[1]] = f32::NEG_INFINITY;
        let want = run(&graph, &inputs, &Reference).unwrap_or_else(|e| panic!("{name}: unfused: {e}"));
        let floored: Vec<bool> = want[0].data.chunks(chain.n_mels).map(|frame| frame.iter().all(|v| *v == -1.5)).collect();
        let expected: Vec<bool> = (0..chain.frames).map(|f| hit.contains(&f)).collect();
        assert_eq!(floored, expected, "{name}: the unfused chain floors the frames holding ±∞, and only those");
        let got = run(&fused, &inputs, &CpuKernel).unwrap_or_else(|e| panic!("{name}: fused: {e}"));
        assert_close(name, &want, &got);
        let definition = run(&fused, &inputs, &Reference).unwrap();
        assert_close(&format!("{name} (definition)"), &want, &definition);
    }
}

/// A finite sample above f32's largest / 2 (3e38): the frame's power
/// overflows to ∞ in the unfused chain, so its mels are +∞. The packed
/// transform of an even n_fft (400, 512) split its bins by adding two such
/// values before halving them: ∞ − ∞, NaN, and the frame −1.5 (found by an
/// adversarial run); it halves first now. The odd 375 never packed.
#[test]
fn a_sample_near_f32_s_largest_overflows_as_unfused() {
    for n_fft in [16, 400, 512, 375] {
        let name = format!("n_fft {n_fft}, one sample of 3e38");
        let chain = LogMelChain::new(5, n_fft, 8);
        let graph = rlx_text::parse(&text::print(&log_mel_chain(chain))).unwrap();
        let (fused, _) = fuse(&graph, "target=cpu");
        assert_eq!(fused_ops(&fused), 1, "{name}: not fused");
        let mut inputs = inputs_of(&graph, chain);
        inputs.get_mut("frames").expect("the frames input").data[2 * n_fft + 3] = 3e38;
        let want = run(&graph, &inputs, &Reference).unwrap_or_else(|e| panic!("{name}: unfused: {e}"));
        assert!(want[0].data[2 * 8..3 * 8].iter().all(|v| *v == f32::INFINITY), "{name}: the unfused frame is +∞: {:?}", &want[0].data[16..24]);
        let got = run(&fused, &inputs, &CpuKernel).unwrap_or_else(|e| panic!("{name}: fused: {e}"));
        assert_close(&name, &want, &got);
        let definition = run(&fused, &inputs, &Reference).unwrap();
        assert_close(&format!("{name} (definition)"), &want, &definition);
    }
}

/// Samples whose FFT overflows f32 on the way (two of 3.4e38 side by side;
/// a tone of amplitude 3e38): the transform's sums met as ∞ − ∞ = NaN and
/// the fused frame was −1.5 where the chain's power is +∞ (an adversarial
/// run); every kernel now transforms at a power-of-two scale undone before
/// squaring (`LogMelAttrs::transform_scale`), so the frame is +∞ in the
/// kernel and the definition. The unfused chain's own f32 FFT overflows
/// there too, +∞ or −1.5 by its algorithm: only the other frames are
/// compared with it.
#[test]
fn samples_whose_transform_overflows_make_infinite_mels() {
    for n_fft in [16, 400, 512, 375] {
        // Every filter weighs every bin: a NaN bin makes every mel NaN, and
        // the frame −1.5 (with a band of its own, a bin that overflowed to
        // ∞ elsewhere in the frame made its floor ∞, and hid the NaN).
        let chain = LogMelChain { const_filters: false, ..LogMelChain::new(5, n_fft, 8) };
        let graph = rlx_text::parse(&text::print(&log_mel_chain(chain))).unwrap();
        let (fused, _) = fuse(&graph, "target=cpu");
        // The tone falls on bin 2 (a tone between bins spreads its power and
        // missed the packed split scaling back before its sum: a review).
        let on_bin = |t: usize| 3e38 * (std::f32::consts::TAU * 2.0 * t as f32 / n_fft as f32).cos();
        for (what, loud) in [("two samples of 3.4e38", 10..12), ("a tone of amplitude 3e38", 0..n_fft), ("a tone of 3e38 on bin 2", 0..n_fft)] {
            let name = format!("n_fft {n_fft}, {what}");
            let mut inputs = inputs_of(&graph, chain);
            inputs.get_mut("mel_filters").expect("the filters input").data.fill(0.5);
            let frames = &mut inputs.get_mut("frames").expect("the frames input").data;
            for (t, v) in frames[2 * n_fft..3 * n_fft].iter_mut().enumerate().filter(|(t, _)| loud.contains(t)) {
                *v = match what {
                    "two samples of 3.4e38" => 3.4e38,
                    "a tone of amplitude 3e38" => 3e38 * (0.7 * t as f32 + 0.1).sin(),
                    _ => on_bin(t),
                };
            }
            let want = run(&graph, &inputs, &Reference).unwrap_or_else(|e| panic!("{name}: unfused: {e}"));
            for (kernel, got) in [("cpu kernel", run(&fused, &inputs, &CpuKernel).unwrap()), ("definition", run(&fused, &inputs, &Reference).unwrap())] {
                assert!(got[0].data[16..24].iter().all(|v| *v == f32::INFINITY), "{name}, {kernel}: the frame is +∞: {:?}", &got[0].data[16..24]);
                let mut others = got.clone();
                others[0].data[16..24].copy_from_slice(&want[0].data[16..24]);
                assert_close(&format!("{name}, {kernel}, the other frames"), &want, &others);
            }
        }
    }
}

/// The chain as RLX prints it, with `edit` applied to its text.
fn edited(chain: LogMelChain, edit: impl Fn(String) -> String) -> Graph {
    rlx_text::parse(&edit(text::print(&log_mel_chain(chain)))).unwrap()
}

fn reason_of(graph: &Graph) -> (Decision, String) {
    let (fused, report) = fuse(graph, "target=cpu");
    assert_eq!(report.len(), 1, "one candidate: {report:?}");
    if report[0].decision == Decision::NotMatched {
        assert_eq!(fused_ops(&fused), 0);
    }
    (report[0].decision, report[0].reason.clone())
}

#[test]
fn chains_that_must_not_fuse_say_why() {
    let base = LogMelChain { const_filters: false, ..LogMelChain::new(4, 64, 10) };
    let inverse = edited(base, |t| t.replace(r#""inverse":false"#, r#""inverse":true"#));
    let (decision, reason) = reason_of(&inverse);
    assert_eq!(decision, Decision::NotMatched);
    assert!(reason.contains("an inverse FFT"), "{reason}");

    // The imaginary plane is the frames themselves, not zero.
    let imaginary = edited(base, |t| t.replace("(%0, %1) : [4, 128]", "(%0, %0) : [4, 128]"));
    let (decision, reason) = reason_of(&imaginary);
    assert_eq!(decision, Decision::NotMatched, "{reason}");
    assert!(reason.contains("is not zero"), "{reason}");

    // Filters for another FFT length (RLX's verifier would refuse them: written as a dynamic row count).
    let mut g = rlx_text::parse(&text::print(&log_mel_chain(base))).unwrap();
    let filters = g.nodes().iter().position(|n| n.op.text().contains("mel_filters")).unwrap();
    let mut wrong = g.clone();
    wrong.node_mut(rlx_opt::ir::NodeId(filters as u32)).ty.dims[0] = rlx_opt::ir::Dim::Dynamic(0);
    let (decision, reason) = reason_of(&wrong);
    assert_eq!(decision, Decision::NotMatched, "{reason}");
    assert!(reason.contains("do not fit an n_fft 64 spectrum"), "{reason}");

    // A spectrum that is also a graph output stays; the log-mel is still fused, priced as kept.
    let spectrum = g.nodes().iter().position(|n| matches!(n.op.kind(), rlx_opt::ir::OpKind::Fft { .. })).unwrap();
    g.outputs.push(rlx_opt::ir::NodeId(spectrum as u32));
    let (fused, report) = fuse(&g, "target=cpu force=true");
    assert_eq!(fused_ops(&fused), 1);
    assert!(report[0].reason.contains("stay for other users"), "{}", report[0].reason);
    assert!(fused.nodes().iter().any(|n| matches!(n.op.kind(), rlx_opt::ir::OpKind::Fft { .. })), "the spectrum stays");
    let inputs = inputs_of(&g, base);
    assert_close("spectrum kept", &run(&g, &inputs, &Reference).unwrap(), &run(&fused, &inputs, &CpuKernel).unwrap());
}

#[test]
fn gpu_targets_lower_to_their_kernels_or_say_why_not() {
    use rlx_opt::fused::Lowering;
    let lowering = |chain: LogMelChain, options: &str| {
        let graph = rlx_text::parse(&text::print(&log_mel_chain(chain))).unwrap();
        let (fused, report) = fuse(&graph, options);
        let node = fused.nodes().iter().find(|n| n.op.log_mel().is_some()).expect("fused");
        (node.op.log_mel().unwrap().unwrap().lowering, report[0].reason.clone())
    };
    assert_eq!(lowering(LogMelChain::new(3000, 400, 80), "target=wgpu force=true").0, Some(Lowering::Spirv));
    assert_eq!(lowering(LogMelChain::new(3000, 400, 80), "target=cuda force=true").0, Some(Lowering::Cuda));
    // 98 = 2·7²: the GPU FFT takes radices 2, 3, 4 and 5 only.
    let (host, reason) = lowering(LogMelChain::new(30, 98, 10), "target=wgpu force=true");
    assert_eq!(host, Some(Lowering::Host));
    assert!(reason.contains("runs as a host call") && reason.contains("prime factor above 5 (7)"), "{reason}");
    let (host, reason) = lowering(LogMelChain::new(30, 400, 10), "target=rocm force=true");
    assert_eq!(host, Some(Lowering::Host));
    assert!(reason.contains("runs as a host call"), "{reason}");
}

/// A device profile with a log-mel line prices the op by its predictions
/// (and the report says so); one without leaves it to the gate; a GPU
/// profile whose host is faster lowers the op to a host call.
#[test]
fn a_device_profile_prices_the_op_by_its_log_mel_line() {
    use rlx_opt::fused::Lowering;
    let shipped: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/profiles/cpu.json")).unwrap()).unwrap();
    assert!(shipped["log_mel"].as_array().is_some_and(|l| !l.is_empty()), "the shipped CPU profile has a log-mel line");
    let dir = std::env::temp_dir().join(format!("rlx-opt-log-mel-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let with = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut p = shipped.clone();
        edit(&mut p);
        let path = dir.join(name);
        std::fs::write(&path, p.to_string()).unwrap();
        format!("profile={}", path.display())
    };
    let graph = rlx_text::parse(&text::print(&log_mel_chain(LogMelChain::new(3000, 400, 80)))).unwrap();
    let decide = |options: &str| {
        let (fused, report) = fuse(&graph, options);
        let lowering = fused.nodes().iter().find_map(|n| n.op.log_mel()).map(|a| a.unwrap().lowering);
        (report[0].decision, report[0].reason.clone(), report[0].predictions.iter().map(|p| p.alternative.to_string()).collect::<Vec<_>>(), lowering)
    };
    // The shipped profile: the fused kernel against the chain unfused.
    let (decision, reason, predicted, _) = decide(&with("cpu.json", &|_| {}));
    assert_eq!(decision, Decision::Fused, "{reason}");
    assert!(reason.starts_with("profile (") && reason.contains("fused") && reason.contains("< unfused"), "{reason}");
    assert_eq!(predicted, ["unfused", "fused"]);
    // A device where the kernel is predicted slower than the chain: not fused, and why.
    let (decision, reason, _, _) = decide(&with("slow.json", &|p| p["log_mel"].as_array_mut().unwrap().iter_mut().for_each(|m| m["frame_ns"] = 1e9.into())));
    assert_eq!(decision, Decision::Rejected, "{reason}");
    assert!(reason.contains("≥ unfused"), "{reason}");
    // No log-mel line (a profile calibrated before the op had one): the gate decides.
    let (decision, reason, predicted, _) = decide(&with("old.json", &|p| drop(p.as_object_mut().unwrap().remove("log_mel"))));
    assert_eq!(decision, Decision::Fused, "{reason}");
    assert!(!reason.contains("profile (") && predicted.is_empty(), "{reason}");
    // A GPU whose kernel is slow beside its host's: the host call is picked.
    let gpu = with("gpu.json", &|p| {
        let host = p.clone();
        p["target"] = "wgpu".into();
        p["upload_bw"] = 10.0.into();
        p["readback_bw"] = 10.0.into();
        p["log_mel"].as_array_mut().unwrap().iter_mut().for_each(|m| m["frame_ns"] = 1e7.into());
        p["host"] = host;
    });
    let (decision, reason, predicted, lowering) = decide(&gpu);
    assert_eq!(predicted, ["unfused", "fused", "host call"], "{reason}");
    assert!(reason.contains("host call"), "{reason}");
    assert_eq!((decision, lowering), (Decision::Fused, Some(Some(Lowering::Host))), "{reason}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The CUDA profiles shipped in examples/profiles (an H100 and an H200,
/// calibrated with the frames' kernel timed alone by CUDA events): each
/// loads, and its log-mel line prices every length above zero, longer FFTs
/// no cheaper than n_fft 64. Timed as whole calls, an H200's line came out
/// 0 ns a frame at n_fft 64–512 (the launch and transfers hid the frames).
#[test]
fn the_shipped_cuda_profiles_have_a_log_mel_line_above_zero() {
    for path in [concat!(env!("CARGO_MANIFEST_DIR"), "/examples/profiles/cuda_h100.json"), concat!(env!("CARGO_MANIFEST_DIR"), "/examples/profiles/cuda_h200.json")] {
        let profile = rlx_opt::analysis::device_profile::DeviceProfile::load(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(profile.target, "cuda");
        let lengths: Vec<u64> = profile.log_mel.iter().map(|l| l.n_fft).collect();
        assert_eq!(lengths, [64, 256, 400, 512, 1024], "{path}");
        let shortest = profile.log_mel[0].frame_ns;
        for line in &profile.log_mel {
            assert!(line.frame_ns > 0.0 && line.frame_ns >= shortest, "{path}: n_fft {}: {} ns a frame", line.n_fft, line.frame_ns);
        }
    }
}
