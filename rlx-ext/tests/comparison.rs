//! The session tests' own checks (`common`), fed results that must fail:
//! a value in a slot RLX does write replaced by the fused op's (−1, −inf),
//! a result equal to RLX alone's on a graph where RLX alone is not known to
//! be wrong, or where the graph holds no fused op; and the count of native
//! GPU kernels, which a run RLX hosted on the CPU must not raise.

mod common;
use common::{Reference, Surplus, Verdict, compare, surplus_slots, verdict};

/// One output of 2 rows of k 4 (bin, power) pairs, 3 bins: slots 6 and 7 of
/// each row are the surplus.
const SURPLUS: Surplus = Surplus { from_end: 0, k: 4, bins: 3 };

fn peaks(surplus_bin: f32, surplus_power: f32) -> Vec<Vec<f32>> {
    let row = |b: f32| vec![b, 9.0, b + 1.0, 5.0, 0.0, 1.0, surplus_bin, surplus_power];
    vec![[row(1.0), row(0.0)].concat()]
}

#[test]
fn unwritten_slots_are_allowed_only_past_the_bins() {
    let rlx = peaks(0.0, 0.0);
    // The fused op's (−1, −inf) in the surplus slots: accepted.
    assert_eq!(compare("surplus", Some(SURPLUS), ("RLX", &rlx), ("fused", &peaks(-1.0, f32::NEG_INFINITY)), 1e-5), Ok(()));
    // Anything else there is not (the fused op defines those slots).
    assert!(compare("surplus", Some(SURPLUS), ("RLX", &rlx), ("fused", &peaks(-1.0, 3.0)), 1e-5).is_err());
    assert!(compare("surplus", Some(SURPLUS), ("RLX", &rlx), ("fused", &peaks(f32::NEG_INFINITY, -1.0)), 1e-5).is_err());
    // −1 or −inf in a slot RLX writes: a bin, a power, of the first and the second row.
    for j in [0, 1, 2, 5, 8, 11] {
        for bad in [-1.0, f32::NEG_INFINITY] {
            let mut fused = peaks(-1.0, f32::NEG_INFINITY);
            fused[0][j] = bad;
            let err = compare("written slot", Some(SURPLUS), ("RLX", &rlx), ("fused", &fused), 1e-5).unwrap_err();
            assert!(err.contains(&format!("output 0[{j}]")), "{err}");
        }
    }
    // An infinity against a finite value (|x − ∞| ≤ rel·∞ held for every x).
    assert!(compare("infinity", None, ("RLX", &[vec![2.0]]), ("fused", &[vec![f32::INFINITY]]), 1e-5).is_err());
    assert!(compare("infinity", None, ("RLX", &[vec![f32::NEG_INFINITY]]), ("fused", &[vec![-3.0]]), 1e-5).is_err());
    // Without surplus slots, none is allowed; nor in an output before the peaks.
    assert!(compare("no surplus", None, ("RLX", &rlx), ("fused", &peaks(-1.0, f32::NEG_INFINITY)), 1e-5).is_err());
    let two = |p: Vec<Vec<f32>>| vec![p[0].clone(), rlx[0].clone()];
    assert!(compare("an output before", Some(SURPLUS), ("RLX", &two(rlx.clone())), ("fused", &two(peaks(-1.0, f32::NEG_INFINITY))), 1e-5).is_err());

    // The generated graphs with k past the bins are found from the graph.
    let found: Vec<_> = common::corpus().iter().filter_map(|(name, g)| surplus_slots(g).map(|s| (name.clone(), s))).collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().all(|(name, _)| name.ends_with(common::UNWRITTEN)), "{found:?}");
    assert!(found.iter().any(|(_, s)| *s == Surplus { from_end: 0, k: 40, bins: 33 }), "{found:?}");
}

#[test]
fn a_result_as_rlx_alone_is_accepted_only_where_listed_and_fused() {
    let cpu = vec![vec![110.0, 1.0]];
    let device = vec![vec![-1.5, 1.0]];
    let wrong_on_device = || Reference { expected: cpu.clone(), device_alone: Some(device.clone()) };
    let fused = "%9 = {\"Custom\":{\"name\":\"rlx_opt.welch_peaks.cuda.abc\"}}";
    let graph = "../tests/fixtures/mixed_opaque_dead.graph";
    // Listed, fused, bit for bit RLX alone's: accepted, and said so.
    assert!(matches!(verdict(graph, "cuda", None, &wrong_on_device(), fused, &device, 1e-4), Ok(Verdict::AsRlxAlone(_))));
    // Agreeing with RLX on the CPU is what every graph must do.
    assert_eq!(verdict(graph, "cuda", None, &wrong_on_device(), fused, &cpu, 1e-4), Ok(Verdict::Matches));
    // Not listed (another graph, another target), not fused (an unfused graph
    // returns RLX alone's result trivially), or not bit for bit: rejected.
    assert!(verdict("generated n_fft=256 segments=8 k=16", "cuda", None, &wrong_on_device(), fused, &device, 1e-4).is_err());
    assert!(verdict(graph, "wgpu", None, &wrong_on_device(), fused, &device, 1e-4).is_err());
    assert!(verdict(graph, "cuda", None, &wrong_on_device(), "%3 = {\"WelchPeaks\":{\"k\":16,\"n_segments\":8}}", &device, 1e-4).is_err());
    assert!(verdict(graph, "cuda", None, &wrong_on_device(), fused, &[vec![-1.5, 1.0000001]], 1e-4).is_err());
    // Where RLX alone was right on the device, only agreeing with it passes.
    let right = Reference { expected: cpu.clone(), device_alone: None };
    assert!(verdict(graph, "cuda", None, &right, fused, &device, 1e-4).is_err());
}

/// A fused op RLX hosts on the CPU in a wgpu session (one fitted to a WGSL
/// kernel that RLX hosts anyway, at batch 8192; a host call, which the
/// shipped lavapipe profile picks at batch 2048) runs the CPU kernel and
/// adds no native use; one RLX dispatches as a WGSL kernel adds one and
/// runs no CPU kernel. (lavapipe in CI; skipped visibly without Vulkan.)
#[test]
fn a_hosted_run_is_not_counted_as_native() {
    if !common::vulkan_available() {
        eprintln!("SKIPPED a_hosted_run_is_not_counted_as_native: no Vulkan device (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let ran = |batch: u64| {
        let text = rlx_opt::testgen::welch_chains(1, batch * 8, 256, 8, 16).replace("return %3, %4", "return %4");
        let graph = rlx_ir::text::parse(&text).unwrap();
        let recording = rlx_ext::Recording::start();
        common::run(rlx_runtime::Device::Gpu, graph.clone(), &common::inputs(&graph));
        (recording.native_gpu_uses(), recording.take().len())
    };
    // Batch 8192: the pass fits the op to a WGSL kernel, which is what a
    // count read off `fuse()` saw, but RLX's arena puts its 64 MiB operand
    // and its result in different binding stripes, and RLX hosts it.
    rlx_ext::install("wgpu").unwrap();
    let text = rlx_opt::testgen::welch_chains(1, 8192 * 8, 256, 8, 16).replace("return %3, %4", "return %4");
    let fitted = rlx_ir::text::print(&rlx_ext::fuse(rlx_ir::text::parse(&text).unwrap(), "target=wgpu").unwrap());
    assert_eq!(fitted.matches("rlx_opt.welch_peaks.wgpu.").count(), 1, "{fitted}");
    assert_eq!(ran(8192), (0, 1), "fitted to wgpu, hosted by RLX: no native use, one CPU kernel call");
    // Batch 2048 with the shipped lavapipe profile: a host call.
    rlx_ext::install_with("target=wgpu profile=../examples/profiles/wgpu_lavapipe.json").unwrap();
    assert_eq!(ran(2048), (0, 1), "hosted: no native use, one CPU kernel call");
    rlx_ext::install_with("target=wgpu force=true").unwrap();
    assert_eq!(ran(4), (1, 0), "native: one WGSL dispatch, no CPU kernel call");
    rlx_ext::uninstall();
}
