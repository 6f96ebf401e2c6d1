//! Against numpy: golden Whisper-style log-mel spectra from
//! `scripts/gen_log_mel_golden.py` (numpy's rfft in float64, the mel product,
//! log10 and RLX's per-frame floor, written from RLX's definition and nothing
//! of RLX's or ours), compared with RLX's unfused chain in the interpreter and
//! through rlx-run's driver, and with the graph `fuse-log-mel` fused, on the
//! op's reference and (once its packing is fixed) the CPU kernel. The goldens live in
//! `tests/golden/log_mel/`, a folder of their own so that `tests/golden.rs`,
//! which runs every graph in `tests/golden/`, keeps its four.

mod common;

use rlx_opt::format::rlx_text;
use rlx_opt::ir::{Graph, OpKind};
use rlx_opt::runtime::{Reference, Tensor, run};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The output is a log: the bound, absolute.
const TOL: f32 = 1e-4;

/// Every golden, with the `mel_filterbank(16000, n_fft, n_mels, f_min, f_max)`
/// its filters were built as (the script's CONFIGS): stem, n_fft, n_mels, f_min, f_max.
const CASES: &[(&str, usize, usize, f64, f64)] = &[
    ("n64_m10_f300", 64, 10, 0.0, 8000.0),
    ("n64_m40_f37_input", 64, 40, 0.0, 8000.0),
    ("n256_m40_f37", 256, 40, 0.0, 8000.0),
    ("n400_m80_f37_input", 400, 80, 0.0, 8000.0),
    ("n400_m80_f8_hann", 400, 80, 0.0, 8000.0),
    ("n400_m128_f1", 400, 128, 0.0, 8000.0),
    ("n512_m128_f4_input", 512, 128, 20.0, 7600.0),
];

fn dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/log_mel")).to_path_buf()
}

fn npy(path: &Path) -> Tensor {
    let npy = npyz::NpyFile::new(std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap();
    let shape = npy.shape().iter().map(|d| *d as usize).collect();
    Tensor::new(shape, npy.into_vec::<f32>().unwrap())
}

/// One golden: its graph, its inputs (frames, and filters when the graph
/// takes them), the input files (for rlx-run), and the expected log-mel.
struct Golden {
    stem: &'static str,
    graph: Graph,
    inputs: HashMap<String, Tensor>,
    files: Vec<(String, PathBuf)>,
    expected: Tensor,
}

fn goldens() -> Vec<Golden> {
    CASES
        .iter()
        .map(|&(stem, ..)| {
            let d = dir();
            let graph = rlx_text::parse(&std::fs::read_to_string(d.join(format!("{stem}.graph"))).unwrap()).unwrap();
            let mut files = vec![("frames".to_string(), d.join(format!("{stem}_frames.npy")))];
            let filters = d.join(format!("{stem}_filters.npy"));
            if filters.exists() {
                files.push(("filters".to_string(), filters));
            }
            let inputs = files.iter().map(|(name, path)| (name.clone(), npy(path))).collect();
            Golden { stem, graph, inputs, files, expected: npy(&d.join(format!("{stem}_logmel.npy"))) }
        })
        .collect()
}

/// Within [`TOL`] everywhere, shapes equal; the largest deviation, for the message.
fn assert_close(what: &str, got: &Tensor, expected: &Tensor) -> f32 {
    assert_eq!(got.shape, expected.shape, "{what}: shape");
    let mut worst = 0f32;
    for (i, (a, b)) in got.data.iter().zip(&expected.data).enumerate() {
        let d = (a - b).abs();
        // NaN fails too: `d <= TOL` is false for it.
        assert!(d <= TOL, "{what}: element {i} (frame {}, mel {}): rlx {a}, numpy {b}", i / expected.shape[1], i % expected.shape[1]);
        worst = worst.max(d);
    }
    worst
}

/// rlx-run's driver (its binary is rlx-ext's) on `graph_path`, .npy in and out.
fn rlx_run(golden: &Golden, graph_path: &Path, extra: &[&str]) -> Tensor {
    let out_dir = std::env::temp_dir().join(format!("rlx-golden-log-mel-{}-{}", std::process::id(), golden.stem));
    let mut args = vec!["rlx-run".to_string(), graph_path.display().to_string()];
    for (name, path) in &golden.files {
        args.extend(["--input".to_string(), format!("{name}={}", path.display())]);
    }
    args.extend(["--output-dir".to_string(), out_dir.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    assert_eq!(rlx_opt::run_cli::main_with_args(args), 0, "{}: rlx-run failed", golden.stem);
    let got = npy(&out_dir.join("0_logmel.npy"));
    let _ = std::fs::remove_dir_all(&out_dir);
    got
}

#[test]
fn every_golden_is_checked() {
    let mut on_disk: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            (path.extension()? == "graph").then(|| path.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CASES.iter().map(|c| c.0.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "tests/golden/log_mel/ and CASES disagree: regenerate, or list the new golden");
}

/// The script rebuilds RLX's filterbank on its own; it must be RLX's, or the
/// goldens would check some other mel scale.
#[test]
fn filters_are_rlx_irs_mel_filterbank() {
    for g in goldens() {
        let &(_, n_fft, n_mels, f_min, f_max) = CASES.iter().find(|c| c.0 == g.stem).unwrap();
        let filters = match g.inputs.get("filters") {
            Some(t) => t.data.clone(),
            None => {
                // The LogMel node's second operand, a Constant.
                let node = g.graph.nodes().iter().find(|n| matches!(n.op.kind(), OpKind::LogMel)).expect("a LogMel node");
                let OpKind::Constant { data } = g.graph.node(node.operands[1]).op.kind() else { panic!("{}: filters neither input nor constant", g.stem) };
                data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
            }
        };
        let rlx = rlx_ir::filterbank::mel_filterbank(16000.0, n_fft, n_mels, f_min, f_max);
        assert_eq!(filters.len(), rlx.len(), "{}", g.stem);
        for (i, (a, b)) in filters.iter().zip(&rlx).enumerate() {
            // Both round the same f64 to f32; one f32 ulp leaves room for a libm's last bit.
            assert!((a - b).abs() <= f32::EPSILON, "{}: filter {} bin {}: numpy {a}, rlx-ir {b}", g.stem, i / (n_fft / 2 + 1), i % (n_fft / 2 + 1));
        }
    }
}

#[test]
fn unfused_chain_matches_numpy() {
    for g in goldens() {
        let got = run(&g.graph, &g.inputs, &Reference).unwrap_or_else(|e| panic!("{}: {e}", g.stem));
        let worst = assert_close(&format!("{} interpreter", g.stem), &got[0], &g.expected);
        eprintln!("{}: interpreter within {worst:e} of numpy", g.stem);
        let got = rlx_run(&g, &dir().join(format!("{}.graph", g.stem)), &[]);
        assert_close(&format!("{} rlx-run", g.stem), &got, &g.expected);
    }
}

/// The graph `--fuse-log-mel` fused (forced: these check numbers, not the gate).
fn fused(g: &Golden) -> Graph {
    use rlx_opt::analysis::Target;
    use rlx_opt::pass::{PassContext, PassOptions, ReportFormat};
    let info = rlx_opt::passes::lookup("fuse-log-mel").expect("the fuse-log-mel pass is registered");
    let mut fused = g.graph.clone();
    let pass = (info.create)(&PassOptions::parse("target=cpu force=true", info).unwrap()).unwrap();
    pass.run(&mut fused, &mut PassContext::new(Target::Cpu, ReportFormat::Text)).unwrap();
    let text = rlx_text::print(&fused);
    assert!(text.contains("rlx_opt.log_mel") && !text.contains("LogMel("), "{}: not fused:\n{text}", g.stem);
    fused
}

/// The fused op's reference (its definition in plain code) on the fused graph.
#[test]
fn fused_reference_matches_numpy() {
    for g in goldens() {
        let got = run(&fused(&g), &g.inputs, &Reference).unwrap_or_else(|e| panic!("{} fused, reference: {e}", g.stem));
        let worst = assert_close(&format!("{} fused, reference", g.stem), &got[0], &g.expected);
        eprintln!("{}: fused on the reference within {worst:e} of numpy", g.stem);
    }
}

/// The native CPU kernel on the fused graph, in the interpreter and through
/// rlx-run. This test caught a kernel that packed two real frames into one
/// complex FFT: the louder frame's rounding landed in the quieter one's
/// spectrum (the silent frame 1 of `n400_m80_f37_input` came out as
/// −1.23…−1.49 where RLX and numpy give −1.5). Whisper pads every clip with
/// zeros to 30 s, so a silent frame beside speech is the common case.
#[test]
fn fused_cpu_kernel_matches_numpy() {
    use rlx_opt::runtime::CpuKernel;
    for g in goldens() {
        let fused = fused(&g);
        let got = run(&fused, &g.inputs, &CpuKernel).unwrap_or_else(|e| panic!("{} fused, cpu: {e}", g.stem));
        let worst = assert_close(&format!("{} fused, cpu", g.stem), &got[0], &g.expected);
        eprintln!("{}: fused on cpu within {worst:e} of numpy", g.stem);
        let path = std::env::temp_dir().join(format!("rlx-golden-log-mel-{}-{}.graph", std::process::id(), g.stem));
        std::fs::write(&path, rlx_text::print(&fused)).unwrap();
        let got = rlx_run(&g, &path, &["--target", "cpu"]);
        let _ = std::fs::remove_file(&path);
        assert_close(&format!("{} fused, rlx-run", g.stem), &got, &g.expected);
    }
}

/// The WGSL kernel (lavapipe in CI) on the fused graph against numpy: the
/// goldens' loud, quiet and silent frames side by side are what shows a
/// kernel whose frames share a transform.
#[test]
fn fused_wgpu_kernel_matches_numpy() {
    let kernels = match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
        Ok(k) => k,
        Err(reason) => return common::skip("fused_wgpu_kernel_matches_numpy", &reason.to_string(), true),
    };
    for g in goldens() {
        let fused = fused(&g);
        let got = run(&fused, &g.inputs, &kernels).unwrap_or_else(|e| panic!("{} fused, wgpu: {e}", g.stem));
        let worst = assert_close(&format!("{} fused, wgpu", g.stem), &got[0], &g.expected);
        eprintln!("{}: fused on wgpu within {worst:e} of numpy", g.stem);
    }
}
