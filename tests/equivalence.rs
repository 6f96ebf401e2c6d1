//! Proof of meaning: a fused graph computes what the unfused one did. The
//! unfused graph runs in the reference interpreter; the fused graph runs with
//! the native CPU kernel; both get the same random inputs.

use rlx_opt::format::rlx_text;
use rlx_opt::ir::Graph;
use rlx_opt::pass::{PassContext, PassOptions};
use rlx_opt::passes::fuse_welch_peaks;
use rlx_opt::runtime::{CpuKernel, Reference, Tensor, random_inputs, run};
use rlx_opt::verify::verify;

const REL: f32 = 1e-5;

fn fused(graph: &Graph) -> (Graph, usize) {
    let mut g = graph.clone();
    let options = PassOptions::parse("target=cpu force=true", &fuse_welch_peaks::INFO).unwrap();
    let pass = (fuse_welch_peaks::INFO.create)(&options).unwrap();
    let mut cx = PassContext::new(rlx_opt::analysis::Target::Cpu, rlx_opt::pass::ReportFormat::Text);
    pass.run(&mut g, &mut cx).unwrap();
    verify(&g).unwrap();
    let count = g.nodes().iter().filter(|n| n.op.text().contains("rlx_opt.welch_peaks")).count();
    (g, count)
}

/// Equal within `REL` relative to the larger magnitude (exactly equal for
/// infinities: an infinity is never "within" a tolerance of a finite
/// value, which `∞ ≤ REL·∞` would say); a bin index differs only where two
/// powers tie within `REL`.
fn assert_close(name: &str, want: &[Tensor], got: &[Tensor]) {
    assert_eq!(want.len(), got.len(), "{name}: output count");
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        assert_eq!(w.shape, g.shape, "{name}: output {i} shape");
        let scale = w.data.iter().filter(|x| x.is_finite()).fold(0f32, |m, x| m.max(x.abs()));
        for (j, (a, b)) in w.data.iter().zip(&g.data).enumerate() {
            let within = a.is_finite() && b.is_finite() && (a - b).abs() <= REL * a.abs().max(b.abs()).max(scale * 1e-3);
            let close = a == b || (a.is_nan() && b.is_nan()) || within;
            assert!(close, "{name}: output {i}[{j}]: unfused {a}, fused {b}");
        }
    }
}

fn check(name: &str, graph: &Graph, seed: u64) -> usize {
    let (fused_graph, count) = fused(graph);
    let inputs = random_inputs(graph, seed).unwrap();
    let want = run(graph, &inputs, &Reference).unwrap_or_else(|e| panic!("{name}: unfused: {e}"));
    let got = run(&fused_graph, &inputs, &CpuKernel).unwrap_or_else(|e| panic!("{name}: fused: {e}"));
    assert_close(name, &want, &got);
    // The kernel agrees with the op's own definition too.
    let reference = run(&fused_graph, &inputs, &Reference).unwrap();
    assert_close(&format!("{name} (definition)"), &reference, &got);
    count
}

/// Loud segments under `Ortho` (power scaled by 1/n_fft): each bin's
/// unscaled power overflows f32 (about 1.4e39 at this gain), its scaled
/// power (what RLX squares: it scales the spectrum, then squares it) does
/// not. The fused op gives the unfused chain's finite peaks and bins; it
/// squared first and scaled after: every power ∞, the bins in index order.
#[test]
fn loud_segments_under_a_scaling_norm_stay_finite_as_unfused() {
    const LOUD: f32 = 4e18;
    let text = r#"graph @ortho_loud {
  %0 = {"Input":{"name":"segs"}} : [8, 256] f32
  %1 = {"Binary":"Sub"}(%0, %0) : [8, 256] f32
  %2 = {"Concat":{"axis":1}}(%0, %1) : [8, 512] f32
  %3 = {"Fft":{"inverse":false,"norm":"Ortho","algo":"Native"}}(%2) : [8, 512] f32
  %4 = {"WelchPeaks":{"k":3,"n_segments":2}}(%3) : [4, 6] f32
  return %4
}
"#;
    let graph = rlx_text::parse(text).unwrap();
    let (fused_graph, count) = fused(&graph);
    assert_eq!(count, 1, "the chain fuses");
    let mut inputs = random_inputs(&graph, 11).unwrap();
    inputs.get_mut("segs").unwrap().data.iter_mut().for_each(|v| *v *= LOUD);
    let want = run(&graph, &inputs, &Reference).unwrap();
    assert!(want[0].data.iter().all(|v| v.is_finite()), "the unfused chain's peaks are finite: {:?}", want[0].data);
    let got = run(&fused_graph, &inputs, &CpuKernel).unwrap();
    assert_close("ortho, loud", &want, &got);
    let definition = run(&fused_graph, &inputs, &Reference).unwrap();
    assert_close("ortho, loud (definition)", &want, &definition);
}

/// RLX's imaginary plane `Sub(x, x)` is NaN where a sample is ±∞, so every
/// power of that batch entry is NaN (ranked first, by bin) and the other
/// entries keep their peaks. The fused op (`inf_is_nan`, set by the pass
/// for that plane) gives the same by the CPU kernel and its definition;
/// it gave ∞ there before. Both forms: RLX's native chain (+∞ in entry 1,
/// −∞ at the last sample of entry 3's last segment, paired with zeros), and
/// a windowed spectrogram whose constant plane is rewritten as `Sub`.
#[test]
fn an_entry_holding_an_infinity_has_nan_powers_as_unfused() {
    let native = rlx_text::parse(&rlx_ir::text::print(&common::welch_native(4, 3, 256, 5, false))).unwrap();
    let spectrogram = std::fs::read_to_string(std::path::Path::new(common::FIXTURES).join("spectrogram_batched.graph")).unwrap();
    let plane = spectrogram.lines().find(|l| l.contains("\"Constant\"") && l.contains("\"data\":[0,0,0,0,0,0")).map(str::to_string);
    for (name, graph, input, at, poisoned) in [
        ("native", native, "segs", vec![(3 * 256 + 4, f32::INFINITY), (12 * 256 - 1, f32::NEG_INFINITY)], vec![1, 3]),
        ("spectrogram, Sub plane", sub_plane(&spectrogram, plane.as_deref()), "x", vec![(5, f32::INFINITY)], vec![0]),
    ] {
        let (fused_graph, count) = fused(&graph);
        assert_eq!(count, 1, "{name}: the chain fuses");
        let mut inputs = random_inputs(&graph, 5).unwrap();
        for &(i, v) in &at {
            inputs.get_mut(input).unwrap().data[i] = v;
        }
        let want = run(&graph, &inputs, &Reference).unwrap();
        let got = run(&fused_graph, &inputs, &CpuKernel).unwrap();
        assert_close(name, &want, &got);
        let definition = run(&fused_graph, &inputs, &Reference).unwrap();
        assert_close(&format!("{name} (definition)"), &want, &definition);
        // The powers: the entries that held ±∞ all NaN, the others all finite.
        let powers = want.last().unwrap();
        let row = *powers.shape.last().unwrap();
        for (entry, values) in powers.data.chunks(row).enumerate() {
            let nan = poisoned.contains(&entry);
            let values: Vec<f32> = if name == "native" { values.iter().skip(1).step_by(2).copied().collect() } else { values.to_vec() };
            assert!(values.iter().all(|v| v.is_nan() == nan && (nan || v.is_finite())), "{name}: entry {entry}: {values:?}");
        }
    }
}

/// The spectrogram's constant imaginary plane `plane` rewritten as
/// `Sub(real, real)` of the `Concat` it joins.
fn sub_plane(text: &str, plane: Option<&str>) -> Graph {
    let plane = plane.expect("a constant plane of zeros");
    let id = plane.trim().split(' ').next().unwrap();
    let ty = plane.rsplit_once(" : ").unwrap().1;
    let concat = text.lines().find(|l| l.contains("\"Concat\"") && l.contains(&format!(", {id})"))).expect("the Concat of the planes");
    let real = concat.split('(').nth(1).unwrap().split(',').next().unwrap();
    let sub = format!("  {id} = {{\"Binary\":\"Sub\"}}({real}, {real}) : {ty}");
    rlx_text::parse(&text.replace(plane, &sub)).unwrap()
}

#[test]
fn fusion_corpus() {
    let mut fused_total = 0;
    for path in common::runnable_fixture_paths() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let graph = rlx_text::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        fused_total += check(&name, &graph, 7);
    }
    assert!(fused_total >= 10, "only {fused_total} fused chains in the corpus");
    // The fixtures left out are left out because the interpreter cannot run them.
    for name in common::NOT_RUNNABLE {
        let graph = rlx_text::parse(&std::fs::read_to_string(std::path::Path::new(common::FIXTURES).join(name)).unwrap()).unwrap();
        let error = run(&graph, &random_inputs(&graph, 7).unwrap(), &Reference).unwrap_err();
        assert!(error.to_string().contains("cannot be run"), "{name}: {error}");
    }
}

mod common;

use rand::{RngExt, SeedableRng};
use rlx_ir::ops::spectral::WindowKind;

/// 200+ generated chain graphs: random batch, segments, FFT lengths (powers of
/// two or not), zero-padded frames, k from 1 to the bin count, every window,
/// the spectrum returned or not, extra consumers of intermediates.
#[test]
fn generated_chains() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2026);
    let windows = [WindowKind::Rectangular, WindowKind::Hann, WindowKind::Hamming, WindowKind::Blackman];
    let mut fused_total = 0;
    for case in 0..220u64 {
        let graph = if case % 2 == 0 {
            let n_fft = [2, 3, 5, 6, 8, 10, 12, 16, 30, 64, 100, 128][rng.random_range(0..12)];
            let (batch, segments) = (rng.random_range(1..5), rng.random_range(1..6));
            let k = rng.random_range(1..=n_fft / 2 + 1);
            common::welch_native(batch, segments, n_fft, k, rng.random_range(0..2) == 1)
        } else {
            let frame: usize = rng.random_range(4..40);
            let hop = rng.random_range(1..=frame);
            let samples = frame + hop * rng.random_range(0..6);
            let bins = frame.next_power_of_two() / 2 + 1;
            let k = rng.random_range(1..=bins);
            let mut g = common::spectrogram_topk(rng.random_range(1..4), samples, frame, hop, windows[rng.random_range(0..4)], k);
            if rng.random_range(0..3) == 0 {
                extra_consumer(&mut g);
            }
            g
        };
        let text = rlx_ir::text::print(&graph);
        let ours = rlx_text::parse(&text).unwrap();
        fused_total += check(&format!("case {case}: {}", text.lines().next().unwrap_or_default()), &ours, case);
    }
    assert!(fused_total >= 200, "only {fused_total} chains fused");
}

/// Return the power spectrum too, so the pass must keep its producers.
fn extra_consumer(g: &mut rlx_ir::Graph) {
    let power = g.nodes().iter().rev().find(|n| matches!(n.op, rlx_ir::Op::Binary(rlx_ir::op::BinaryOp::Add))).map(|n| n.id).unwrap();
    let shape = g.shape(power).clone();
    let relu = g.add_node(rlx_ir::Op::Activation(rlx_ir::op::Activation::Relu), vec![power], shape);
    let mut outputs = g.outputs.clone();
    outputs.push(relu);
    g.set_outputs(outputs);
}

/// The interpreter's WelchPeaks is RLX's: same bins and powers as rlx-ir's own
/// `welch_peaks_block_f32` on random spectra (k within the bin count, where RLX is defined).
#[test]
fn welch_peaks_matches_rlx() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for _ in 0..50 {
        let n_fft = rng.random_range(1..40usize);
        let (batch, segments) = (rng.random_range(1..4usize), rng.random_range(1..5usize));
        let k = rng.random_range(1..=n_fft / 2 + 1);
        let spectrum: Vec<f32> = (0..batch * segments * 2 * n_fft).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let mut rlx = vec![0f32; batch * 2 * k];
        rlx_ir::audio::welch_peaks_block_f32(&spectrum, batch, n_fft, segments, k, &mut rlx);
        let text = format!(
            "graph @w {{\n  %0 = {{\"Input\":{{\"name\":\"s\"}}}} : [{}, {}] f32\n  %1 = {{\"WelchPeaks\":{{\"k\":{k},\"n_segments\":{segments}}}}}(%0) : [{batch}, {}] f32\n  return %1\n}}\n",
            batch * segments,
            2 * n_fft,
            2 * k
        );
        let graph = rlx_text::parse(&text).unwrap();
        let inputs = [("s".to_string(), Tensor::new(vec![batch * segments, 2 * n_fft], spectrum))].into();
        let ours = run(&graph, &inputs, &Reference).unwrap();
        assert_eq!(ours[0].data, rlx, "n_fft {n_fft}, batch {batch}, segments {segments}, k {k}");
    }
}

#[test]
fn complex_norm_sq_runs_on_c64_pairs() {
    let g = rlx_text::parse("graph @c {\n  %0 = {\"Input\":{\"name\":\"z\"}} : [3] c64\n  %1 = ComplexNormSq(%0) : [3] f32\n  return %1\n}\n").unwrap();
    let z = Tensor::new(vec![3, 2], vec![3.0, 4.0, 1.0, -1.0, 0.0, 2.0]);
    let out = run(&g, &[("z".to_string(), z)].into(), &Reference).unwrap();
    assert_eq!(out[0].data, [25.0, 2.0, 4.0]);
}
