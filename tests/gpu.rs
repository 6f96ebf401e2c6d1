//! The GPU kernels for real: the WGSL kernel's SPIR-V through wgpu on Vulkan
//! (lavapipe in CI) and the CUDA kernel through NVRTC + cudarc (on a machine
//! with an NVIDIA GPU), each against the CPU kernel on the same inputs:
//! identical bins, powers within 1e-4 relative. Without the hardware, each
//! test prints a `SKIPPED` line with the reason; CI installs lavapipe and
//! NVRTC, so there the wgpu and NVRTC tests must run (CI has no NVIDIA GPU:
//! the CUDA run test skips there, visibly).

mod common;

use rand::{RngExt, SeedableRng};
use rlx_ir::ops::spectral::WindowKind;
use rlx_opt::format::rlx_text;
use rlx_opt::ir::Graph;
use rlx_opt::pass::{PassContext, PassOptions};
use rlx_opt::passes::fuse_welch_peaks;
use rlx_opt::runtime::{CpuKernel, Tensor, random_inputs, run};

fn fused(graph: &Graph) -> Graph {
    let mut g = graph.clone();
    let options = PassOptions::parse("target=cpu force=true", &fuse_welch_peaks::INFO).unwrap();
    let pass = (fuse_welch_peaks::INFO.create)(&options).unwrap();
    pass.run(&mut g, &mut PassContext::new(rlx_opt::analysis::Target::Cpu, rlx_opt::pass::ReportFormat::Text)).unwrap();
    g
}

fn assert_same(name: &str, cpu: &[Tensor], gpu: &[Tensor]) {
    assert_eq!(cpu.len(), gpu.len(), "{name}: output count");
    for (c, g) in cpu.iter().zip(gpu) {
        assert_eq!(c.shape, g.shape, "{name}");
        let scale = c.data.iter().filter(|x| x.is_finite()).fold(0f32, |m, x| m.max(x.abs()));
        for (j, (a, b)) in c.data.iter().zip(&g.data).enumerate() {
            let ok = a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(scale * 1e-3);
            assert!(ok, "{name}: element {j}: cpu {a}, gpu {b}");
        }
    }
}

/// Graphs whose fused ops the GPU kernels take (FFT lengths of 2s, 3s and
/// 5s up to 4096 in one pass; powers of two beyond, in several).
fn corpus() -> Vec<(String, Graph)> {
    let mut graphs = Vec::new();
    for path in common::runnable_fixture_paths() {
        graphs.push((path.file_name().unwrap().to_string_lossy().into_owned(), rlx_text::parse(&std::fs::read_to_string(&path).unwrap()).unwrap()));
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let windows = [WindowKind::Rectangular, WindowKind::Hann, WindowKind::Hamming, WindowKind::Blackman];
    for case in 0..24 {
        let g = if case % 2 == 0 {
            let n: usize = [2, 4, 8, 16, 64, 256, 6, 12, 20, 100, 160, 375, 400, 480][rng.random_range(0..14)];
            common::welch_native(rng.random_range(1..4), rng.random_range(1..6), n, rng.random_range(1..=n / 2 + 1), case % 4 == 0)
        } else {
            let frame: usize = rng.random_range(4..60);
            let hop = rng.random_range(1..=frame);
            let k = rng.random_range(1..=frame.next_power_of_two() / 2 + 1);
            common::spectrogram_topk(rng.random_range(1..4), frame + hop * rng.random_range(0..5), frame, hop, windows[case % 4], k)
        };
        graphs.push((format!("generated {case}"), rlx_text::parse(&rlx_ir::text::print(&g)).unwrap()));
    }
    // The limits the kernels promise: n_fft 4096 and k 256 in one pass, and
    // longer FFTs through the multi-pass plan.
    graphs.push(("n4096_k256".into(), rlx_text::parse(&rlx_ir::text::print(&common::welch_native(2, 3, 4096, 256, false))).unwrap()));
    graphs.push(("n8192_multipass".into(), rlx_text::parse(&rlx_ir::text::print(&common::welch_native(2, 3, 8192, 300, true))).unwrap()));
    graphs.push(("n16384_multipass_k1".into(), rlx_text::parse(&rlx_ir::text::print(&common::welch_native(1, 2, 16384, 1, false))).unwrap()));
    graphs.push((
        "spectrogram_multipass".into(),
        rlx_text::parse(&rlx_ir::text::print(&common::spectrogram_topk(2, 12000, 5000, 2500, WindowKind::Hann, 40))).unwrap(),
    ));
    graphs
}

type Inputs = std::collections::HashMap<String, Tensor>;

/// Fused ops in `g`.
fn fused_ops(g: &Graph) -> usize {
    g.nodes().iter().filter(|n| n.op.welch_peaks().is_some()).count()
}

/// Runs every graph of the corpus on the GPU and on the CPU kernel; returns
/// how many graphs ran with at least one fused op (the others, near misses,
/// run no GPU kernel and compare the CPU with itself).
fn check_all(run_gpu: &dyn Fn(&Graph, &Inputs) -> Vec<Tensor>) -> usize {
    let mut count = 0;
    for (name, graph) in corpus() {
        let g = fused(&graph);
        let inputs = random_inputs(&g, 5).unwrap();
        let cpu = run(&g, &inputs, &CpuKernel).unwrap();
        assert_same(&name, &cpu, &run_gpu(&g, &inputs));
        count += usize::from(fused_ops(&g) > 0);
    }
    count
}

/// Graphs of the corpus with a fused op, which the GPU tests must all run:
/// the 44 graphs less the 7 near-miss fixtures, which nothing fuses.
const GPU_GRAPHS: usize = 37;

#[test]
fn wgpu_kernel_matches_cpu_kernel() {
    let Some(forms) = common::wgpu_forms(&format!("wgpu_kernel_matches_cpu_kernel ({} graphs not run)", corpus().len())) else { return };
    for (form, kernels) in forms {
        println!("wgpu adapter: {}, the kernels with {form}", kernels.adapter);
        let count = check_all(&|g, inputs| run(g, inputs, &kernels).unwrap_or_else(|e| panic!("{form}: {e}")));
        println!("{count} graphs with a fused op matched the CPU kernel on wgpu ({form})");
        assert!(count >= GPU_GRAPHS, "only {count} graphs with a fused op ran on wgpu ({form})");
    }
}

/// What wgpu refuses is this run's error, never its panicking error
/// handler: batch 0 (no zero-size bindings) gives an empty result, an
/// operand over the plan's binding limit is refused by the plan, and one
/// over the adapter's own limit, which a plan trusting too much let
/// through, is caught from wgpu's validation.
#[test]
fn wgpu_refusals_are_errors_not_panics() {
    use rlx_opt::analysis::DeviceLimits;
    use rlx_opt::fused::WelchPeaksAttrs;
    use rlx_opt::runtime::FusedKernel;
    let kernels = match rlx_opt::runtime::wgpu_kernel::WgpuKernels::new() {
        Ok(k) => k,
        Err(reason) => return common::skip("wgpu_refusals_are_errors_not_panics", &reason.to_string(), true),
    };
    let attrs = WelchPeaksAttrs::rlx(256, 1, 4);
    let empty = kernels.run(&attrs, &Tensor::zeros(vec![0, 256]), None).unwrap();
    assert_eq!((empty.shape[0], empty.data.len()), (0, 0));
    // n_fft 1 has no GPU kernel; rlx-run runs an op fused for the CPU on
    // the CPU kernel there, and still refuses one lowered to the GPU.
    let cpu = WelchPeaksAttrs { lowering: Some(rlx_opt::fused::Lowering::Cpu), ..WelchPeaksAttrs::rlx(1, 2, 1) };
    let ones = Tensor::new(vec![2, 1], vec![1.0, 3.0]);
    assert!(kernels.run(&cpu, &ones, None).is_err());
    let dispatch = rlx_opt::runtime::DispatchByLowering::new(Box::new(rlx_opt::runtime::wgpu_kernel::WgpuKernels::new().unwrap()));
    assert_eq!(dispatch.run(&cpu, &ones, None).unwrap().data, rlx_opt::runtime::CpuKernel.run(&cpu, &ones, None).unwrap().data);
    let gpu = WelchPeaksAttrs { lowering: Some(rlx_opt::fused::Lowering::Spirv), ..cpu };
    assert!(dispatch.run(&gpu, &ones, None).is_err());
    let adapter = kernels.limits();
    let kernels = kernels.planning_with(DeviceLimits { max_binding_bytes: 1024, ..adapter });
    let refused = kernels.run(&attrs, &Tensor::zeros(vec![2, 256]), None).unwrap_err().to_string();
    assert!(refused.contains("the input takes 2048 bytes, more than one binding covers on this device (1024)"), "{refused}");
    println!("refused by the plan: {refused}");
    // One row more than the adapter binds (lavapipe: 128 MiB), planned as if it could.
    let rows = adapter.max_binding_bytes / 1024 + 1;
    if adapter.max_binding_bytes > 256 << 20 {
        return common::skip("wgpu_refusals_are_errors_not_panics (over the adapter's binding limit)", &format!("this adapter binds {} bytes; the test allocates at most 256 MiB", adapter.max_binding_bytes), false);
    }
    let kernels = kernels.planning_with(DeviceLimits { max_binding_bytes: u64::MAX, ..adapter });
    let refused = kernels.run(&attrs, &Tensor::zeros(vec![rows as usize, 256]), None).unwrap_err().to_string();
    assert!(refused.contains("wgpu refused the kernel") && refused.contains("binding"), "{refused}");
    println!("refused by wgpu: {refused}");
}

#[test]
fn cuda_kernel_matches_cpu_kernel() {
    let kernels = match rlx_opt::runtime::cuda_kernel::CudaKernels::new() {
        Ok(k) => k,
        // CI has NVRTC but no NVIDIA GPU: the skip shows, and does not fail there.
        Err(reason) => return common::skip(&format!("cuda_kernel_matches_cpu_kernel ({} graphs not run)", corpus().len()), &reason.to_string(), false),
    };
    println!("CUDA device: {} ({}), {:?}", kernels.device, kernels.arch, kernels.attributes);
    // The plan takes the device's own limits, not an H100's assumed ones.
    assert_eq!(kernels.limits(), rlx_opt::runtime::cuda_kernel::limits_of(&kernels.attributes).unwrap());
    let count = check_all(&|g, inputs| run(g, inputs, &kernels).unwrap_or_else(|e| panic!("{e}")));
    println!("{count} graphs with a fused op matched the CPU kernel on CUDA");
    assert!(count >= GPU_GRAPHS, "only {count} graphs with a fused op ran on CUDA");
}

/// `time_kernel` with no run to time is an error (it indexed an empty
/// vector), and every plan's launches, scratch buffers allocated before the
/// timed calls, run through it. Skips without an NVIDIA GPU.
#[test]
fn cuda_time_kernel_runs_every_plan_and_refuses_zero_runs() {
    use rlx_opt::analysis::Target;
    use rlx_opt::analysis::plan::{DeviceLimits, f32_type, plan};
    use rlx_opt::fused::{PlanName, WelchPeaksAttrs};
    let kernels = match rlx_opt::runtime::cuda_kernel::CudaKernels::new() {
        Ok(k) => k,
        Err(reason) => return common::skip("cuda_time_kernel_runs_every_plan_and_refuses_zero_runs", &reason.to_string(), false),
    };
    // One long signal at n_fft 8192: every plan runs as itself.
    let input = Tensor::new(vec![64, 8192], (0..64 * 8192).map(|i| ((i % 977) as f32 * 0.013).sin()).collect());
    for name in PlanName::ALL {
        let attrs = WelchPeaksAttrs { plan: Some(name), ..WelchPeaksAttrs::rlx(8192, 64, 8) };
        if !plan(&attrs, &f32_type(&input.shape), Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).is_ok_and(|p| p.name == name) {
            continue;
        }
        assert!(kernels.time_kernel(&attrs, &input, None, 0).is_err(), "{name}: runs = 0");
        kernels.time_kernel(&attrs, &input, None, 2).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// Every fused op of the GPU corpus, compiled by NVRTC for the H100 (sm_90)
/// and A100 (sm_80): compile errors, register spills and shared-memory
/// overuse fail here, in CI, without a GPU.
#[test]
fn nvrtc_compiles_every_specialization() {
    if !rlx_opt::lower::cuda::nvrtc_available() {
        return common::skip(&format!("nvrtc_compiles_every_specialization ({} graphs not compiled)", corpus().len()), "libnvrtc.so.12 not on LD_LIBRARY_PATH", true);
    }
    let mut seen = std::collections::HashSet::new();
    for (name, graph) in corpus() {
        let g = fused(&graph);
        for node in g.nodes() {
            let Some(attrs) = node.op.welch_peaks() else { continue };
            let attrs = attrs.unwrap();
            let shape: Vec<usize> = g.node(node.operands[0]).ty.static_dims().unwrap().iter().map(|d| *d as usize).collect();
            let cuda = rlx_opt::analysis::Target::Cuda;
            let spec = rlx_opt::lower::specialize_for(attrs, &shape, cuda, &rlx_opt::analysis::DeviceLimits::assumed(cuda)).unwrap();
            if !seen.insert(format!("{:?}", spec.constants)) {
                continue;
            }
            for arch in ["sm_90", "sm_80"] {
                rlx_opt::lower::cuda::compile(&spec, arch).unwrap_or_else(|e| panic!("{name}: {e}"));
                // The same kernels with RLX's entry points (rlx-cuda's fixed custom-kernel signature).
                let rlx = rlx_opt::lower::Bindings::RlxArena { stage: 0 };
                let (_, ptx, _) = rlx_opt::lower::cuda::compile_with(&spec, rlx, arch).unwrap_or_else(|e| panic!("{name} (RLX entries): {e}"));
                // Every launch of the plan, as RLX launches it (split plans included).
                for rlx_opt::lower::Launch { entry, .. } in rlx_opt::lower::launches(&spec.kernel) {
                    let entry = rlx_opt::lower::cuda::rlx_entry(entry);
                    assert!(ptx.contains(&format!(".entry {entry}(")), "{name}: no {entry} in the PTX of its {} plan", spec.kernel.plan);
                }
            }
        }
    }
    assert!(seen.len() >= 30, "only {} specializations", seen.len());
}
