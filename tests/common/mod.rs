//! Graphs for the integration tests, built with rlx-ir's own builders and
//! printed by rlx-ir, so fixtures are what RLX users really produce; the one
//! folder of hand-written fixtures; and how a test that cannot run says so.
#![allow(dead_code)]

pub mod child;

use rlx_ir::op::{Activation, BinaryOp, ReduceOp};
use rlx_ir::ops::spectral::WindowKind;
use rlx_ir::{DType, Graph, Op, Shape, text};
use std::io::Write as _;
use std::path::PathBuf;

/// The one home of the `.graph` fixtures every test reads; the snapshots
/// taken of them live beside them, in its `snapshots/`.
// Relative to the package root, where cargo runs integration tests: a test
// binary carried to another machine (scripts/gpu-run.sh) reads the fixtures
// of the tree it runs in, not of the machine that built it.
pub const FIXTURES: &str = "tests/fixtures";

/// Every `.graph` in [`FIXTURES`], sorted by name.
pub fn fixture_paths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "graph"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 17, "{FIXTURES} holds only {} graphs", paths.len());
    paths
}

/// Fixtures with ops the interpreter cannot run (rlx-opt rewrites and prints
/// them, nothing runs them): the tests that run graphs leave them out, and
/// `equivalence` checks that they still cannot be run.
pub const NOT_RUNNABLE: &[&str] = &["mixed_opaque_dead.graph"];

/// [`fixture_paths`] less [`NOT_RUNNABLE`].
pub fn runnable_fixture_paths() -> Vec<PathBuf> {
    fixture_paths().into_iter().filter(|p| !NOT_RUNNABLE.iter().any(|n| p.ends_with(n))).collect()
}

/// A test that cannot run here: one `SKIPPED <what>: <reason>` line on the
/// real stderr (libtest captures `print!`, so a skip would otherwise pass
/// unseen), and a failure under CI (`CI` set) when CI provides what is missing.
pub fn skip(what: &str, reason: &str, required_in_ci: bool) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {what}: {reason}");
    if required_in_ci {
        assert!(std::env::var("CI").is_err(), "{what} must run in CI, which installs what it needs: {reason}");
    }
}

/// RLX's native WelchPeaks chain on `[batch·segments, n_fft]` segments.
pub fn welch_native(batch: usize, segments: usize, n_fft: usize, k: usize, spectrum_out: bool) -> Graph {
    let mut g = Graph::new("welch_native");
    let rows = batch * segments;
    let x = g.input("segs", Shape::new(&[rows, n_fft], DType::F32));
    let zero = g.binary(BinaryOp::Sub, x, x, Shape::new(&[rows, n_fft], DType::F32));
    let block = g.add_node(Op::Concat { axis: 1 }, vec![x, zero], Shape::new(&[rows, 2 * n_fft], DType::F32));
    let spec = g.fft(block, false);
    let peaks = g.welch_peaks(spec, k, segments);
    g.set_outputs(if spectrum_out { vec![spec, peaks] } else { vec![peaks] });
    g
}

/// `spectrogram(power) → mean over frames → TopK → GatherElements`, as RLX users build it.
pub fn spectrogram_topk(channels: usize, samples: usize, frame: usize, hop: usize, window: WindowKind, k: usize) -> Graph {
    let mut g = Graph::new("spectrogram_topk");
    let x = g.input("x", Shape::new(&[channels, samples], DType::F32));
    let s = g.spectrogram(x, frame, hop, window, true, false);
    let dims: Vec<usize> = g.shape(s).dims().iter().map(|d| d.unwrap_static()).collect();
    let bins = *dims.last().unwrap();
    let mean = g.reduce(s, ReduceOp::Mean, vec![0], false, Shape::new(&dims[1..], DType::F32));
    let mut top_dims = dims[1..].to_vec();
    *top_dims.last_mut().unwrap() = k.min(bins);
    let idx = g.add_node(Op::TopK { k: k.min(bins) }, vec![mean], Shape::new(&top_dims, DType::F32));
    let vals = g.gather_elements(mean, idx, (top_dims.len() - 1) as i32);
    g.set_outputs(vec![idx, vals]);
    g
}

/// A graph with ops rlx-opt does not understand, names, a non-finite float and a log-mel.
pub fn mixed_model() -> Graph {
    let mut g = Graph::new("mixed.model_1");
    let x = g.input("audio", Shape::new(&[4, 400], DType::F32));
    let w = g.param("proj", Shape::new(&[257, 80], DType::F32));
    let s = g.spectrogram(x, 400, 160, WindowKind::Hann, true, true);
    let sdims: Vec<usize> = g.shape(s).dims().iter().map(|d| d.unwrap_static()).collect();
    let r = g.add_node(Op::Reshape { new_shape: vec![4, 257] }, vec![s], Shape::new(&[4, 257], DType::F32));
    let m = g.add_node(Op::MatMul, vec![r, w], Shape::new(&[4, 80], DType::F32));
    let c = g.add_node(Op::Clamp { min: f32::NEG_INFINITY, max: 1.0 }, vec![m], Shape::new(&[4, 80], DType::F32));
    let a = g.add_node(Op::Activation(Activation::Gelu), vec![c], Shape::new(&[4, 80], DType::F32));
    g.node_mut(a).name = Some("gelu \"out\" }".into());
    let sm = g.add_node(Op::Softmax { axis: 1 }, vec![a], Shape::new(&[4, 80], DType::F32));
    assert_eq!(sdims, vec![1, 4, 257]);
    g.set_outputs(vec![sm, s]);
    g
}

/// Every graph the conformance tests use, printed by rlx-ir.
pub fn rlx_printed_corpus() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (b, s, n, k, spec) in [(1, 1, 2, 1, false), (4, 8, 256, 16, true), (3, 5, 100, 51, false), (2, 2, 4096, 256, true)] {
        out.push((format!("welch_native_b{b}_s{s}_n{n}_k{k}"), text::print(&welch_native(b, s, n, k, spec))));
    }
    for (c, t, f, h, w, k) in [
        (8, 1024, 128, 64, WindowKind::Hann, 4),
        (2, 500, 100, 50, WindowKind::Rectangular, 3),
        (1, 256, 256, 256, WindowKind::Hamming, 129),
        (3, 1000, 250, 125, WindowKind::Blackman, 7),
    ] {
        out.push((format!("spectrogram_c{c}_t{t}_f{f}_h{h}_k{k}"), text::print(&spectrogram_topk(c, t, f, h, w, k))));
    }
    out.push(("mixed_model".into(), text::print(&mixed_model())));
    for path in fixture_paths() {
        let text = std::fs::read_to_string(&path).unwrap();
        // Fixtures RLX printed itself print back identically through rlx-ir.
        if let Ok(g) = text::parse(&text)
            && text::print(&g) == text
        {
            out.push((path.file_stem().unwrap().to_string_lossy().into_owned(), text));
        }
    }
    out
}

/// Write `bytes` to `dir/name`; its path.
pub fn write(dir: &std::path::Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A test path as the `&str` a command line takes.
pub fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// Run one of the package's binaries to completion.
pub fn run(bin: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(bin).args(args).output().unwrap()
}

pub fn rlx_opt(args: &[&str]) -> std::process::Output {
    run(env!("CARGO_BIN_EXE_rlx-opt"), args)
}

pub fn rlx_trace(args: &[&str]) -> std::process::Output {
    run(env!("CARGO_BIN_EXE_rlx-trace"), args)
}

pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// How a generated log-mel chain gets its frames and filters.
#[derive(Debug, Clone, Copy)]
pub struct LogMelChain {
    pub frames: usize,
    pub n_fft: usize,
    /// Samples per frame before zero padding (≤ n_fft).
    pub frame_len: usize,
    pub n_mels: usize,
    /// The filterbank a constant of the graph (else an input, `mel_filters`).
    pub const_filters: bool,
    /// A periodic Hann window multiplied into the frames.
    pub window: bool,
    /// Frames cut from a signal `[T]` at this hop (`Graph::spectrogram`'s framing).
    pub hop: Option<usize>,
    pub norm: rlx_ir::fft::FftNorm,
}

impl LogMelChain {
    pub fn new(frames: usize, n_fft: usize, n_mels: usize) -> Self {
        LogMelChain { frames, n_fft, frame_len: n_fft, n_mels, const_filters: true, window: false, hop: None, norm: rlx_ir::fft::FftNorm::Backward }
    }
}

fn f32_constant(g: &mut Graph, data: &[f32], dims: &[usize]) -> rlx_ir::NodeId {
    let bytes = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    g.add_node(Op::Constant { data: bytes }, vec![], Shape::new(dims, DType::F32))
}

/// RLX's log-mel front end: frames → [× window] → [zero padding] → `Concat(x, Sub(x, x))`
/// → `Fft` → `LogMel(spectrum, rlx-ir's mel filterbank at 16 kHz)`.
pub fn log_mel_chain(c: LogMelChain) -> Graph {
    let mut g = Graph::new("log_mel");
    let (f, l, n) = (c.frames, c.frame_len, c.n_fft);
    let frames = match c.hop {
        None => g.input("frames", Shape::new(&[f, l], DType::F32)),
        Some(hop) => {
            let t = (f - 1) * hop + l;
            let x = g.input("signal", Shape::new(&[t], DType::F32));
            let rows: Vec<_> = (0..f)
                .map(|i| {
                    let frame = g.add_node(Op::Narrow { axis: 0, start: i * hop, len: l }, vec![x], Shape::new(&[l], DType::F32));
                    g.add_node(Op::Reshape { new_shape: vec![1, l as i64] }, vec![frame], Shape::new(&[1, l], DType::F32))
                })
                .collect();
            if f == 1 { rows[0] } else { g.add_node(Op::Concat { axis: 0 }, rows, Shape::new(&[f, l], DType::F32)) }
        }
    };
    let windowed = if c.window {
        let hann: Vec<f32> = (0..l).map(|i| 0.5 - 0.5 * (2.0 * std::f32::consts::PI * i as f32 / l as f32).cos()).collect();
        let w = f32_constant(&mut g, &hann, &[l]);
        g.binary(BinaryOp::Mul, frames, w, Shape::new(&[f, l], DType::F32))
    } else {
        frames
    };
    let real = if l < n {
        let pad = g.add_node(Op::Constant { data: vec![0; 4 * f * (n - l)] }, vec![], Shape::new(&[f, n - l], DType::F32));
        g.add_node(Op::Concat { axis: 1 }, vec![windowed, pad], Shape::new(&[f, n], DType::F32))
    } else {
        windowed
    };
    let zero = g.binary(BinaryOp::Sub, real, real, Shape::new(&[f, n], DType::F32));
    let block = g.add_node(Op::Concat { axis: 1 }, vec![real, zero], Shape::new(&[f, 2 * n], DType::F32));
    let spec = g.fft_norm(block, false, c.norm);
    let bank = rlx_ir::filterbank::mel_filterbank(16000.0, n, c.n_mels, 0.0, 8000.0);
    let filters = if c.const_filters {
        f32_constant(&mut g, &bank, &[c.n_mels, n / 2 + 1])
    } else {
        g.input("mel_filters", Shape::new(&[c.n_mels, n / 2 + 1], DType::F32))
    };
    let out = g.log_mel(spec, filters);
    g.set_outputs(vec![out]);
    g
}

/// The wgpu adapter's two forms of the Welch-peaks kernels, each named:
/// with subgroup operations (where the adapter has them) and with
/// workgroup memory alone. `None`, after a visible skip, where there is no
/// Vulkan adapter; under CI the adapter (lavapipe) must have subgroups, so
/// that both forms run.
#[cfg(feature = "wgpu")]
pub fn wgpu_forms(what: &str) -> Option<Vec<(&'static str, rlx_opt::runtime::wgpu_kernel::WgpuKernels)>> {
    use rlx_opt::runtime::wgpu_kernel::WgpuKernels;
    let kernels = match WgpuKernels::new() {
        Ok(k) => k,
        Err(reason) => {
            skip(what, &reason.to_string(), true);
            return None;
        }
    };
    let workgroup = WgpuKernels::new().expect("the adapter opened once").without_subgroups();
    if !kernels.subgroups() {
        skip(&format!("{what} with subgroups"), &format!("{} has no subgroup operations (wgpu's SUBGROUP feature)", kernels.adapter), true);
        return Some(vec![("workgroup memory", workgroup)]);
    }
    Some(vec![("subgroups", kernels), ("workgroup memory", workgroup)])
}
