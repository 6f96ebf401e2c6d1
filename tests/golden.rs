//! Against scipy: golden peaks from `scripts/gen_golden.py` (scipy's Welch PSD
//! and top-k, converted to RLX's scaling), compared with the unfused graph in
//! the interpreter and the fused graph on the native CPU kernel.

use rlx_opt::format::rlx_text;
use rlx_opt::pass::{PassContext, PassOptions};
use rlx_opt::passes::fuse_welch_peaks;
use rlx_opt::runtime::{CpuKernel, FusedKernel, Reference, Tensor, run};
use std::collections::HashMap;
use std::path::Path;

fn npy(path: &Path) -> Tensor {
    let npy = npyz::NpyFile::new(std::fs::File::open(path).unwrap()).unwrap();
    let shape = npy.shape().iter().map(|d| *d as usize).collect();
    Tensor::new(shape, npy.into_vec::<f32>().unwrap())
}

#[test]
fn matches_scipy_welch() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"));
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "graph") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let graph = rlx_text::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let inputs: HashMap<String, Tensor> = [("segs".to_string(), npy(&dir.join(format!("{stem}_segs.npy"))))].into();
        let expected = npy(&dir.join(format!("{stem}_peaks.npy")));

        let mut fused = graph.clone();
        let pass = (fuse_welch_peaks::INFO.create)(&PassOptions::parse("target=cpu", &fuse_welch_peaks::INFO).unwrap()).unwrap();
        pass.run(&mut fused, &mut PassContext::new(rlx_opt::analysis::Target::Cpu, rlx_opt::pass::ReportFormat::Text)).unwrap();
        assert!(rlx_text::print(&fused).contains("rlx_opt.welch_peaks"), "{stem}: not fused");

        for (how, g, ops) in [("unfused", &graph, &Reference as &dyn FusedKernel), ("fused", &fused, &CpuKernel)] {
            let got = run(g, &inputs, ops).unwrap();
            assert_eq!(got[0].shape, expected.shape, "{stem} {how}");
            for (i, (a, b)) in got[0].data.iter().zip(&expected.data).enumerate() {
                let tol = if i % 2 == 0 { 0.0 } else { 1e-4 * b.abs() };
                assert!((a - b).abs() <= tol, "{stem} {how}: element {i}: rlx {a}, scipy {b}");
            }
        }
        // And through rlx-run's driver (its binary is rlx-ext's), .npy in and out.
        let out_dir = std::env::temp_dir().join(format!("rlx-golden-{}-{stem}", std::process::id()));
        let segs = dir.join(format!("{stem}_segs.npy"));
        let args = ["rlx-run", path.to_str().unwrap(), "--input", &format!("segs={}", segs.display()), "--output-dir", out_dir.to_str().unwrap()];
        assert_eq!(rlx_opt::run_cli::main_with_args(args.map(String::from).to_vec()), 0, "{stem}: rlx-run failed");
        let got = npy(&out_dir.join("0_peaks.npy"));
        assert_eq!(got.shape, expected.shape, "{stem} rlx-run");
        for (i, (a, b)) in got.data.iter().zip(&expected.data).enumerate() {
            let tol = if i % 2 == 0 { 0.0 } else { 1e-4 * b.abs() };
            assert!((a - b).abs() <= tol, "{stem} rlx-run: element {i}: rlx {a}, scipy {b}");
        }
        let _ = std::fs::remove_dir_all(&out_dir);
        checked += 1;
    }
    assert_eq!(checked, 4);
}
