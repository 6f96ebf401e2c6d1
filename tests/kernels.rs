//! The generated kernels for a few geometries, as snapshots: the specialised
//! WGSL and CUDA constants, naga's Metal Shading Language (Metal cannot be
//! compiled or run on Linux, so naga's validation and this snapshot are what
//! it gets), and the manifests.

use insta::assert_snapshot;
use rlx_opt::fused::{ChainForm, Doubling, InputLayout, Lowering, OutputLayout, WelchPeaksAttrs};
use rlx_opt::analysis::{DeviceLimits, Target};
use rlx_opt::lower::{cuda, manifest, specialize_for, wgsl};

fn geometries() -> Vec<(&'static str, WelchPeaksAttrs, Vec<usize>)> {
    let base = WelchPeaksAttrs { lowering: Some(Lowering::Spirv), ..WelchPeaksAttrs::rlx(256, 8, 16) };
    vec![
        ("rlx_welch_256", base.clone(), vec![2048, 256]),
        (
            "spectrogram_hann_signal_1024",
            WelchPeaksAttrs {
                form: ChainForm::SpectrogramTopk,
                input_layout: InputLayout::Signal,
                n_fft: 1024,
                frame_len: 1000,
                hop: Some(500),
                segments: 7,
                k: 8,
                window: true,
                doubling: Doubling::None,
                output_layout: OutputLayout::Planar,
                ..base.clone()
            },
            vec![4, 3, 4000],
        ),
        ("limits_4096_k256", WelchPeaksAttrs { n_fft: 4096, frame_len: 4096, segments: 3, k: 256, lowering: Some(Lowering::Cuda), ..base.clone() }, vec![6, 4096]),
        // The multi-pass plan: WGSL's four-step FFT, 6000 = 75·80.
        ("four_step_6000", WelchPeaksAttrs { n_fft: 6000, frame_len: 6000, segments: 3, k: 8, ..base }, vec![6, 6000]),
    ]
}

fn constants_of(source: &str) -> String {
    source.lines().filter(|l| l.starts_with("const ") || l.starts_with("#define ")).collect::<Vec<_>>().join("\n")
}

#[test]
fn generated_kernels() {
    for (name, attrs, shape) in geometries() {
        let spec = specialize_for(&attrs, &shape, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap();
        let kernel = wgsl::compile(&spec).unwrap();
        // Fitted to RLX's arena (rlx-wgpu's custom kernels): naga validates it too.
        wgsl::compile_with(&spec, rlx_opt::lower::Bindings::RlxArena { stage: 1 }).unwrap_or_else(|e| panic!("{name}, RLX's arena: {e}"));
        // The four-step geometry here is WGSL's; CUDA's four-step FFT takes
        // a plan of its own (its buffers padded), so no CUDA source of it here.
        let cu = match spec.kernel.fft {
            rlx_opt::lower::FftPasses::FourStep { .. } => "(none: WGSL's four-step plan; CUDA's four-step FFT takes a plan of its own)".to_string(),
            _ => constants_of(&cuda::source(&spec).unwrap()),
        };
        let files = ["welch_peaks.wgsl", "welch_peaks.spv", "welch_peaks.metal"].map(String::from);
        let manifest = serde_json::to_string_pretty(&manifest("spirv", wgsl::ENTRY, &files, &spec, &attrs)).unwrap();
        let out = format!(
            "// WGSL constants\n{}\n\n// CUDA constants\n{}\n\n// manifest\n{manifest}\n\n// Metal (naga)\n{}",
            constants_of(&kernel.wgsl),
            cu,
            kernel.msl().unwrap()
        );
        assert_snapshot!(name, out);
    }
}

/// The CUDA sources, one-pass and multi-pass, with either kind of entry
/// points: shared memory is never reached through a pointer of another type
/// (the one-pass top-k's keys live in a union with the FFT buffer, not in
/// float2 storage cast to `Key*`: strict aliasing), and RLX's arena is
/// reached as float2 only through `spectra_at`, which refuses an odd f32
/// offset (float2 needs 8 bytes' alignment). NVRTC compiles them all in
/// tests/gpu.rs (`nvrtc_compiles_every_specialization`).
#[test]
fn cuda_sources_keep_types_and_alignment() {
    use rlx_opt::lower::Bindings;
    // 8192 points in both multi-pass forms: the four-step FFT (the
    // default) and the radix-2 stages.
    let stages = DeviceLimits { four_step: false, ..DeviceLimits::assumed(Target::Cuda) };
    for (n, rows, limits) in [(256u64, 64usize, DeviceLimits::assumed(Target::Cuda)), (8192, 16, DeviceLimits::assumed(Target::Cuda)), (8192, 16, stages)] {
        let cuda_target = Target::Cuda;
        let spec = specialize_for(&WelchPeaksAttrs::rlx(n, 8, 16), &[rows, n as usize], cuda_target, &limits).unwrap();
        for bindings in [Bindings::Buffers, Bindings::RlxArena { stage: 0 }] {
            let source = cuda::source_with(&spec, bindings).unwrap();
            let casts: Vec<&str> = source.lines().filter(|l| l.contains("reinterpret_cast<")).map(str::trim).collect();
            let allowed = ["return reinterpret_cast<float2*>(arena + off);"];
            assert!(casts.iter().all(|c| allowed.contains(c)), "n_fft {n}, {bindings:?}: casts {casts:?}");
            if matches!(bindings, Bindings::RlxArena { .. }) && n > 4096 {
                assert!(source.contains("if (off & 1u) __trap();"), "n_fft {n}: the arena's spectra offset is not checked");
                assert_eq!(casts.len(), 1);
            }
        }
    }
}
