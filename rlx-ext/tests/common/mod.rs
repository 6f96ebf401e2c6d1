//! What the RLX session tests share: the corpus of graphs, seeded inputs,
//! and the comparison of RLX alone against RLX with rlx-ext installed.
#![allow(dead_code)]

use rlx_opt::testgen::welch_chains;

/// The fusion corpus (rlx-opt's fixtures and shipped examples that RLX
/// reads and runs) and generated chains: one-pass and multi-pass FFTs,
/// k past the bin count and past a workgroup, odd segment counts.
pub fn corpus() -> Vec<(String, rlx_ir::Graph)> {
    let mut graphs = Vec::new();
    for dir in ["../tests/fixtures", "../examples/graphs"] {
        let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "graph")).collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            // Fixtures of ops RLX does not know (opaque-op tests) are not RLX graphs.
            if let Ok(graph) = rlx_ir::text::parse(&text) {
                graphs.push((path.display().to_string(), graph));
            }
        }
    }
    // The last two are one long signal each (batch 1): split plans, one-pass
    // and multi-pass, on a GPU.
    for (rows, n_fft, segments, k) in [(64, 256, 8, 16), (60, 64, 3, 40), (32, 512, 4, 300), (16, 8192, 2, 8), (4097, 256, 4097, 8), (67, 8192, 67, 5)] {
        let text = welch_chains(1, rows, n_fft, segments, k);
        let surplus = if k > n_fft / 2 + 1 { UNWRITTEN } else { "" };
        graphs.push((format!("generated n_fft={n_fft} segments={segments} k={k}{surplus}"), rlx_ir::text::parse(&text).unwrap()));
    }
    graphs
}

/// Seeded inputs in [-1, 1) for every input of `graph`.
pub fn inputs(graph: &rlx_ir::Graph) -> Vec<(String, Vec<f32>)> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    graph
        .nodes()
        .iter()
        .filter_map(|n| match &n.op {
            rlx_ir::Op::Input { name } => Some((name.clone(), n.shape.num_elements().unwrap())),
            _ => None,
        })
        .map(|(name, len)| {
            let data = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
                })
                .collect();
            (name, data)
        })
        .collect()
}

pub fn run(device: rlx_runtime::Device, graph: rlx_ir::Graph, inputs: &[(String, Vec<f32>)]) -> Vec<Vec<f32>> {
    let mut compiled = rlx_runtime::Session::new(device).compile(graph);
    let named: Vec<(&str, &[f32])> = inputs.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
    compiled.run(&named)
}

/// Marks a graph whose k exceeds the bins. RLX's WelchPeaks then leaves the
/// surplus slots of its result unwritten (whatever the arena held: zeros in
/// a fresh one); the fused op defines them as (bin −1, power −inf).
pub const UNWRITTEN: &str = " (k past the bins: RLX leaves the surplus slots unwritten)";

/// Every output value equal within `rel` of the larger magnitude (bins,
/// being integers, must then be identical); in graphs marked [`UNWRITTEN`],
/// a slot RLX left unwritten (any value) may hold the fused op's (−1, −inf).
pub fn assert_close(what: &str, alone: &[Vec<f32>], fused: &[Vec<f32>], rel: f32) {
    if let Err(difference) = compare(what, ("RLX alone", alone), ("with rlx-ext", fused), rel) {
        panic!("{difference}");
    }
}

/// [`assert_close`]'s check of two labelled results, the first difference
/// as the error.
pub fn compare(what: &str, (a_label, alone): (&str, &[Vec<f32>]), (b_label, fused): (&str, &[Vec<f32>]), rel: f32) -> Result<(), String> {
    let unwritten_ok = what.ends_with(UNWRITTEN);
    if alone.len() != fused.len() {
        return Err(format!("{what}: {} outputs against {}", alone.len(), fused.len()));
    }
    for (i, (a, b)) in alone.iter().zip(fused).enumerate() {
        if a.len() != b.len() {
            return Err(format!("{what}: output {i} has {} values against {}", a.len(), b.len()));
        }
        for (j, (x, y)) in a.iter().zip(b).enumerate() {
            let surplus = unwritten_ok && (*y == -1.0 || *y == f32::NEG_INFINITY);
            let same = surplus || x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= rel * x.abs().max(y.abs());
            if !same {
                return Err(format!("{what}: output {i}[{j}]: {a_label} {x}, {b_label} {y}"));
            }
        }
    }
    Ok(())
}

/// Whether a Vulkan device can be opened (lavapipe in CI).
pub fn vulkan_available() -> bool {
    std::panic::catch_unwind(|| rlx_runtime::Session::try_new(rlx_runtime::Device::Gpu).is_ok()).unwrap_or(false)
}

/// RLX alone against RLX with `install(target)` on `device`, over the
/// corpus, within `rel`; graphs RLX 0.2.19 itself cannot run there (its
/// WelchPeaks GPU step panics on some) are left out, visibly. Where RLX
/// alone on the device disagrees with RLX on the CPU, the result with
/// rlx-ext must agree with the CPU, or be exactly what RLX alone returned on
/// the device (RLX's fault lies outside what rlx-ext replaces), visibly. `check` sees
/// each graph's name and the RLX text of what the registered pass makes of
/// it (RLX compiles the same). Returns how many fused ops ran as `target`'s
/// kernels.
#[allow(dead_code)] // not every test file runs a GPU backend
pub fn compare_with_rlx_alone(device: rlx_runtime::Device, target: &str, rel: f32, check: impl Fn(&str, &str)) -> usize {
    let corpus = corpus();
    let alone: Vec<_> = corpus
        .iter()
        .map(|(name, g)| {
            let result = std::panic::catch_unwind(|| run(device, g.clone(), &inputs(g))).ok();
            let Some(on_device) = result else {
                eprintln!("SKIPPED {name} on {target}: RLX alone panics on it");
                return None;
            };
            if device == rlx_runtime::Device::Cpu {
                return Some(Reference { expected: on_device, device_alone: None });
            }
            // RLX's own GPU kernels are not always right (past a driver's
            // limits, one long signal on lavapipe): where RLX alone on the
            // device disagrees with RLX on the CPU, the CPU is the reference.
            // (RLX's wgpu backend drops a spectrum output its own fusion
            // consumed, so the device's outputs are the CPU's last ones.)
            let on_cpu = run(rlx_runtime::Device::Cpu, g.clone(), &inputs(g));
            let on_cpu = on_cpu[on_cpu.len().saturating_sub(on_device.len())..].to_vec();
            let same_shapes = on_cpu.len() == on_device.len() && on_cpu.iter().zip(&on_device).all(|(a, b)| a.len() == b.len());
            match compare(name, ("RLX on the CPU", &on_cpu), (&format!("RLX alone on {target}"), &on_device), rel) {
                Err(difference) if same_shapes => {
                    eprintln!("REFERENCE for {name} on {target} is RLX on the CPU, as RLX alone on {target} disagrees: {difference}");
                    Some(Reference { expected: on_cpu, device_alone: Some(on_device) })
                }
                _ => Some(Reference { expected: on_device, device_alone: None }),
            }
        })
        .collect();
    // The generated chains are what the split and multi-pass ops are tested
    // on: none may drop out.
    for ((name, _), alone) in corpus.iter().zip(&alone) {
        assert!(alone.is_some() || !name.starts_with("generated"), "{name}: RLX alone must run it on {target}");
    }
    rlx_ext::install(target).unwrap();
    let mut native = 0;
    for ((name, graph), alone) in corpus.iter().zip(&alone) {
        let Some(alone) = alone else { continue };
        let fused = rlx_ir::text::print(&rlx_ext::fuse(graph.clone(), &format!("target={target}")).unwrap());
        native += fused.matches(&format!("rlx_opt.welch_peaks.{target}.")).count();
        check(name, &fused);
        let with_ext = run(device, graph.clone(), &inputs(graph));
        match (compare(name, ("RLX alone", &alone.expected), ("with rlx-ext", &with_ext), rel), &alone.device_alone) {
            (Ok(()), _) => {}
            // Bit for bit what RLX alone returned there: RLX's own fault,
            // outside what rlx-ext replaces (on CUDA, a dead op of the graph
            // overwrites an output's arena slot), neither mended nor worsened.
            (Err(difference), Some(device_alone)) if *device_alone == with_ext => {
                eprintln!("AS RLX ALONE for {name} on {target}: with rlx-ext returns exactly what RLX alone returns there; both disagree with RLX on the CPU: {difference}")
            }
            (Err(difference), _) => panic!("{difference}"),
        }
    }
    native
}

/// What RLX with rlx-ext must return for one graph: RLX alone's result on
/// the device, or RLX's on the CPU where the device's disagrees with it (then
/// also the device's own).
struct Reference {
    expected: Vec<Vec<f32>>,
    device_alone: Option<Vec<Vec<f32>>>,
}
