//! fuse-welch-peaks on structured random graphs: valid and near-valid Welch
//! chains (both forms, odd sizes, extra users, a broken link). Whatever the
//! pass does, its output verifies, prints as RLX text that parses back, and
//! computes what the unfused graph computed.
#![no_main]
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rlx_opt::analysis::Target;
use rlx_opt::format::rlx_text;
use rlx_opt::pass::{PassContext, PassOptions, ReportFormat};
use rlx_opt::passes::fuse_welch_peaks;
use rlx_opt::runtime::{CpuKernel, Reference, random_inputs, run};
use rlx_opt::verify::verify;

#[derive(Arbitrary, Debug)]
struct Chain {
    log2_n: u8,
    segments: u8,
    k: u8,
    rows_per_segment: u8,
    chains: u8,
    keep_spectrum: bool,
    /// Replace the FFT by another op: a near-valid chain that must stay.
    break_fft: bool,
    target: u8,
}

fuzz_target!(|c: Chain| {
    let n = 1u64 << (1 + c.log2_n % 7);
    let segments = 1 + u64::from(c.segments % 9);
    let rows = segments * (1 + u64::from(c.rows_per_segment % 4));
    let k = 1 + u64::from(c.k % 80);
    let chains = 1 + usize::from(c.chains % 2);
    let mut text = rlx_opt::testgen::welch_chains(chains, rows, n, segments, k);
    if !c.keep_spectrum {
        let peaks: Vec<String> = (0..chains).map(|i| format!("%{}", i * 5 + 4)).collect();
        let ret = text.lines().find(|l| l.trim_start().starts_with("return")).unwrap().to_string();
        text = text.replace(&ret, &format!("  return {}", peaks.join(", ")));
    }
    if c.break_fft {
        text = text.replacen(r#"{"Fft":{"inverse":false,"norm":"Backward","algo":"Native"}}"#, r#"{"Activation":"Relu"}"#, 1);
    }
    let Ok(graph) = rlx_text::parse(&text) else { return };
    if verify(&graph).is_err() {
        return;
    }
    let target = [Target::Cpu, Target::Wgpu, Target::Cuda, Target::Metal][usize::from(c.target % 4)];
    let mut fused = graph.clone();
    let options = PassOptions::parse(&format!("target={} force=true", target.name()), &fuse_welch_peaks::INFO).unwrap();
    let pass = (fuse_welch_peaks::INFO.create)(&options).unwrap();
    pass.run(&mut fused, &mut PassContext::new(target, ReportFormat::Text)).unwrap();
    verify(&fused).unwrap_or_else(|e| panic!("the pass wrote a graph that does not verify: {e}"));
    let printed = rlx_text::print(&fused);
    let again = rlx_text::parse(&printed).unwrap_or_else(|e| panic!("the pass's output does not parse: {e:?}"));
    assert_eq!(rlx_text::print(&again), printed);
    let inputs = random_inputs(&graph, 7).unwrap();
    let want = run(&graph, &inputs, &Reference).unwrap();
    let got = run(&fused, &inputs, &CpuKernel).unwrap();
    assert_eq!(want.len(), got.len());
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(w.shape, g.shape);
        let scale = w.data.iter().filter(|x| x.is_finite()).fold(0f32, |m, x| m.max(x.abs()));
        for (a, b) in w.data.iter().zip(&g.data) {
            let close = a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(scale * 1e-2);
            assert!(close, "unfused {a}, fused {b}\n{text}");
        }
    }
});
