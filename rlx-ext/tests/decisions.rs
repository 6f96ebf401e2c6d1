//! Where RLX has no native kernel for the fused op (ROCm, Metal and MLX
//! here; CUDA without the `cuda` feature; a shape past a kernel's limits)
//! the pass leaves the chain unfused or lowers it to the host call, priced
//! as one: the decision is tested, those backends cannot run here.

use rlx_opt::testgen::welch_chains;

fn lowering_of(fused: &rlx_ir::Graph) -> Vec<String> {
    fused
        .nodes()
        .iter()
        .filter_map(|n| match &n.op {
            rlx_ir::Op::Custom { name, attrs, .. } if name.starts_with("rlx_opt.welch_peaks") || name.starts_with("rlx_opt.log_mel") => {
                let attrs: serde_json::Value = serde_json::from_slice(attrs).unwrap();
                Some(format!("{name} {}", attrs["lowering"]))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn backends_without_a_kernel_get_the_host_call() {
    let graph = rlx_ir::text::parse(&welch_chains(1, 8192 * 8, 256, 8, 16)).unwrap();
    for target in ["rocm", "metal", "mlx", "tpu"] {
        let fused = rlx_ext::fuse(graph.clone(), &format!("target={target} force=true")).unwrap();
        assert_eq!(lowering_of(&fused), ["rlx_opt.welch_peaks \"host\""], "{target}");
        // Without force, the gate prices the host call: whatever it decides
        // is what the command line decides with native-kernels=false.
        let gated = rlx_ext::fuse(graph.clone(), &format!("target={target}")).unwrap();
        let text = rlx_opt::format::rlx_text::print(&rlx_ext::from_rlx(&graph).unwrap());
        let mut ours = rlx_opt::format::rlx_text::parse(&text).unwrap();
        let info = rlx_opt::passes::lookup("fuse-welch-peaks").unwrap();
        let pass = (info.create)(&rlx_opt::pass::PassOptions::parse(&format!("target={target} native-kernels=false"), info).unwrap()).unwrap();
        let target_enum = rlx_opt::analysis::Target::from_name(target).unwrap();
        pass.run(&mut ours, &mut rlx_opt::pass::PassContext::new(target_enum, rlx_opt::pass::ReportFormat::Text)).unwrap();
        assert_eq!(rlx_ir::text::print(&gated), rlx_opt::format::rlx_text::print(&ours), "{target}: the same decision as the CLI");
    }
    #[cfg(not(feature = "cuda"))]
    assert_eq!(lowering_of(&rlx_ext::fuse(graph.clone(), "target=cuda force=true").unwrap()), ["rlx_opt.welch_peaks \"host\""]);
    // With RLX's CUDA backend built in, the op is fitted to the CUDA kernel.
    #[cfg(feature = "cuda")]
    {
        let fitted = lowering_of(&rlx_ext::fuse(graph.clone(), "target=cuda force=true").unwrap());
        assert!(fitted.len() == 1 && fitted[0].starts_with("rlx_opt.welch_peaks.cuda.") && fitted[0].ends_with("\"cuda\""), "{fitted:?}");
    }
}

#[test]
fn shapes_past_the_kernels_limits_run_the_host_call_on_gpus() {
    // n_fft 131072 is longer than the GPU kernels take.
    let graph = rlx_ir::text::parse(&welch_chains(1, 4, 131072, 2, 4)).unwrap();
    let fused = rlx_ext::fuse(graph, "target=wgpu force=true").unwrap();
    assert_eq!(lowering_of(&fused), ["rlx_opt.welch_peaks \"host\""]);
}

#[test]
fn wgpu_ops_are_named_for_their_specialisation() {
    let graph = rlx_ir::text::parse(&welch_chains(1, 64, 256, 8, 16)).unwrap();
    let fused = rlx_ext::fuse(graph.clone(), "target=wgpu force=true").unwrap();
    let names = lowering_of(&fused);
    assert_eq!(names.len(), 1);
    assert!(names[0].starts_with("rlx_opt.welch_peaks.wgpu.") && names[0].ends_with("\"spirv\""), "{names:?}");
    // The same op on the same shape gets the same name (RLX's kernel cache).
    assert_eq!(lowering_of(&rlx_ext::fuse(graph, "target=wgpu force=true").unwrap()), names);
}

#[test]
fn errors_name_what_is_wrong() {
    let graph = rlx_ir::text::parse(&welch_chains(1, 64, 256, 8, 16)).unwrap();
    assert!(rlx_ext::install("vulkan").unwrap_err().to_string().contains("unknown target `vulkan`"));
    assert!(rlx_ext::fuse(graph.clone(), "bogus=1").unwrap_err().to_string().contains("no option `bogus`"));
    assert!(rlx_ext::fuse(graph, "target=gpu").unwrap_err().to_string().contains("unknown target `gpu`"));
}

#[test]
fn conversion_is_exact_both_ways() {
    let mut files: Vec<_> = std::fs::read_dir("../tests/fixtures").unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "graph")).collect();
    files.extend(std::fs::read_dir("../examples/graphs").unwrap().map(|e| e.unwrap().path()));
    let mut converted = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(rlx) = rlx_ir::text::parse(&text) else { continue };
        let ours = rlx_ext::from_rlx(&rlx).unwrap();
        assert_eq!(rlx_opt::format::rlx_text::print(&ours), rlx_ir::text::print(&rlx), "{}", path.display());
        let back = rlx_ext::to_rlx(&ours).unwrap();
        assert_eq!(rlx_ir::text::print(&back), rlx_ir::text::print(&rlx), "{}", path.display());
        converted += 1;
    }
    assert!(converted >= 10, "{converted} fixtures converted");
}

#[test]
fn a_profile_decides_for_the_device_it_measured() {
    // On lavapipe the WGSL kernel is slower than the CPU kernel RLX would
    // host: the shipped profile of it says so, the uncalibrated gate cannot.
    let text = welch_chains(1, 2048 * 8, 256, 8, 16).replace("return %3, %4", "return %4");
    let graph = rlx_ir::text::parse(&text).unwrap();
    let lavapipe = "../examples/profiles/wgpu_lavapipe.json";
    let calibrated = format!("target=wgpu profile={lavapipe}");
    assert_eq!(lowering_of(&rlx_ext::fuse(graph.clone(), &calibrated).unwrap()), ["rlx_opt.welch_peaks \"host\""]);
    let uncalibrated = lowering_of(&rlx_ext::fuse(graph.clone(), "target=wgpu").unwrap());
    assert!(uncalibrated.len() == 1 && uncalibrated[0].ends_with("\"spirv\""), "{uncalibrated:?}");

    // The registered pass runs with what it was installed with: in a CPU
    // session a host call runs the CPU kernel under the fused op's name, an
    // op fitted to wgpu under its specialisation's.
    let ran = |graph: &rlx_ir::Graph| -> Vec<String> {
        let x: Vec<f32> = (0..2048 * 8 * 256).map(|i| ((i % 977) as f32 * 0.013).sin()).collect();
        let mut compiled = rlx_runtime::Session::new(rlx_runtime::Device::Cpu).compile(graph.clone());
        let recording = rlx_ext::Recording::start();
        compiled.run(&[("segs0", &x)]);
        recording.take().into_iter().map(|call| call.name).collect()
    };
    rlx_ext::install_with(&calibrated).unwrap();
    assert_eq!(ran(&graph), ["rlx_opt.welch_peaks"]);
    rlx_ext::install("wgpu").unwrap();
    let fitted = ran(&graph);
    assert!(fitted.len() == 1 && fitted[0].starts_with("rlx_opt.welch_peaks.wgpu."), "{fitted:?}");
    rlx_ext::uninstall();

    // What the pass refuses is the install's error.
    let missing = rlx_ext::install_with("target=wgpu profile=../examples/profiles/missing.json").unwrap_err().to_string();
    assert!(missing.contains("missing.json"), "{missing}");
    let other = rlx_ext::install_with(&format!("target=cpu profile={lavapipe}")).unwrap_err().to_string();
    assert!(other.contains("measured a wgpu device, the pass targets cpu"), "{other}");
    assert!(rlx_ext::install_with("target=wgpu bogus=1").unwrap_err().to_string().contains("no option `bogus`"));
}

#[test]
fn log_mel_decides_by_the_kernels_rlx_has_and_the_profile() {
    let text = std::fs::read_to_string("../examples/graphs/log_mel_whisper_like.graph").unwrap();
    let graph = rlx_ir::text::parse(&text).unwrap();
    let decided = |options: &str| lowering_of(&rlx_ext::fuse(graph.clone(), options).unwrap());
    // Uncalibrated on wgpu: the WGSL kernels, fitted to RLX's arena as two ops.
    let wgpu = decided("target=wgpu");
    assert!(wgpu.len() == 2 && wgpu.iter().all(|l| l.starts_with("rlx_opt.log_mel.wgpu.") && l.ends_with("\"spirv\"")), "{wgpu:?}");
    // On lavapipe the CPU kernel through the host is faster than the WGSL on
    // the same CPU: the shipped profile's log-mel lines say so.
    assert_eq!(decided("target=wgpu profile=../examples/profiles/wgpu_lavapipe.json"), ["rlx_opt.log_mel \"host\""]);
    // RLX's CUDA sessions: the CUDA kernels with the `cuda` feature (they
    // ran in RLX on an H200: log_mel_cuda_session.rs), the host call
    // without it or where `RLX_EXT_CUDA_LOG_MEL=0` says so.
    if std::env::var("RLX_EXT_CUDA_LOG_MEL").is_ok() {
        eprintln!("SKIPPED the CUDA default in log_mel_decides_by_the_kernels_rlx_has_and_the_profile: RLX_EXT_CUDA_LOG_MEL is set");
    } else if cfg!(feature = "cuda") {
        let cuda = decided("target=cuda");
        assert!(cuda.len() == 2 && cuda.iter().all(|l| l.starts_with("rlx_opt.log_mel.cuda.") && l.ends_with("\"cuda\"")), "{cuda:?}");
    } else {
        assert_eq!(decided("target=cuda"), ["rlx_opt.log_mel \"host\""]);
    }
}

/// rlx-opt's gate (`CostModel::Rlx`) against RLX's own, `rlx_compile`'s
/// `io_fusion_gate_for_target`: the same knobs on every target, and the same
/// score and decision on benefits no test of the gate was written from (its
/// unit tests restate RLX's table; this reads RLX's code).
#[test]
fn the_gate_scores_as_rlx_compile_does() {
    use rlx_compile::{FusionTarget, fusion_benefit::FusionBenefit as RlxBenefit};
    use rlx_opt::analysis::{FusionBenefit, IoFusionGate, Target};
    let pairs = [
        (Target::Cpu, FusionTarget::Cpu),
        (Target::Cuda, FusionTarget::Cuda),
        (Target::Rocm, FusionTarget::Rocm),
        (Target::Metal, FusionTarget::Metal),
        (Target::Mlx, FusionTarget::Mlx),
        (Target::Wgpu, FusionTarget::Wgpu),
        (Target::Tpu, FusionTarget::Tpu),
    ];
    assert_eq!(pairs.len(), Target::ALL.len());
    for (target, theirs) in pairs {
        let ours = IoFusionGate::for_target(target);
        let rlx = rlx_compile::fusion_pipeline::io_fusion_gate_for_target(theirs);
        assert_eq!(
            (ours.dispatch_ns, ours.roundtrip_ns, ours.memory_bw, ours.readback_bw, ours.unified, ours.thunk_penalty_ns, ours.min_gain_ns),
            (rlx.dispatch_ns, rlx.roundtrip_ns, rlx.memory_bw, rlx.host_readback_bw, rlx.unified_memory, rlx.host_thunk_penalty_ns, rlx.min_gain_ns),
            "{target:?}"
        );
        for (launches, syncs, readback, traffic) in [(2, 0, 1 << 20, -(1 << 22)), (-1, -1, 33_554_432 - 1_048_576, -34_603_008), (0, 1, -4096, 0), (5, -2, 7, 123_456_789)] {
            let b = FusionBenefit { launches_saved: launches, sync_points_saved: syncs, host_readback_bytes_saved: readback, device_traffic_bytes_saved: traffic };
            let theirs = RlxBenefit { launches_saved: launches as isize, sync_points_saved: syncs as isize, host_readback_bytes_saved: readback, device_traffic_bytes_saved: traffic };
            let (score, rlx_score) = (ours.score(&b), rlx.score_ns(&theirs));
            assert!((score.score_ns - rlx_score).abs() <= 1e-9 * rlx_score.abs().max(1.0), "{target:?} {b:?}: {} against RLX's {rlx_score}", score.score_ns);
            assert_eq!(score.fuse, rlx_score >= rlx.min_gain_ns, "{target:?} {b:?}");
        }
    }
}
