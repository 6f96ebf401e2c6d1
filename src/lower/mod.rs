//! Lowering the fused op to native kernels: the kernel sources in
//! `kernels/`, specialised per fused op by replacing their `{{…}}`
//! placeholders, checked by their real compilers (naga for WGSL, which also
//! writes SPIR-V and Metal; NVRTC for CUDA), and described by a manifest.

pub mod cuda;
pub mod emit;
pub mod wgsl;

use crate::fused::{Doubling, OutputLayout, WelchPeaksAttrs};
use crate::runtime::welch::geometry;
use serde::Serialize;

/// Threads per workgroup/block (fewer for tiny FFTs, so the FFT buffer can
/// hold the top-k reduction).
pub const MAX_THREADS: u32 = 256;
/// The largest FFT a workgroup holds: 8 bytes per point in 32 KiB, the
/// workgroup memory every Vulkan device (lavapipe included) guarantees.
/// Longer FFTs take the multi-pass plan.
pub const MAX_ONE_PASS_N_FFT: u64 = 4096;
/// The largest FFT of the multi-pass plan (each thread keeps 129 bins).
pub const MAX_N_FFT: u64 = 65536;

/// How a fused op's FFT is laid out on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    /// One kernel: the FFT in workgroup memory.
    OnePass,
    /// `load`, one `stage` per radix-2 stage, then `peaks_of`, through a
    /// global spectrum buffer (for FFTs longer than workgroup memory holds).
    MultiPass,
}

/// One fused op made concrete for one input shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Specialization {
    pub plan: Plan,
    /// Placeholder → value, in the order the kernels declare them.
    pub constants: Vec<(&'static str, String)>,
    pub threads: u32,
    /// Workgroups/blocks: one per batch entry.
    pub groups: u64,
    pub shared_bytes: u64,
    pub input_len: u64,
    pub window_len: u64,
    pub output_len: u64,
    /// Complex values of the multi-pass plan's global spectrum buffer (0 for one pass).
    pub spectra_len: u64,
    pub log2n: u32,
}

/// Check the op fits the kernels and fix every constant.
pub fn specialize(attrs: &WelchPeaksAttrs, input_shape: &[usize]) -> Result<Specialization, String> {
    let n = attrs.n_fft;
    if !n.is_power_of_two() || n < 2 {
        return Err(format!("the GPU kernels need a power-of-two n_fft ≥ 2, not {n} (the CPU kernel takes any length)"));
    }
    if n > MAX_N_FFT {
        return Err(format!("n_fft {n} is longer than the GPU kernels take (at most {MAX_N_FFT}, multi-pass beyond {MAX_ONE_PASS_N_FFT})"));
    }
    let plan = if n <= MAX_ONE_PASS_N_FFT { Plan::OnePass } else { Plan::MultiPass };
    let g = geometry(attrs, input_shape);
    let threads = MAX_THREADS.min(n as u32);
    let bins = n / 2 + 1;
    let per_thread = bins.div_ceil(threads as u64);
    let len = attrs.frame_len;
    let (batch_stride, segment_stride) = match attrs.input_layout {
        crate::fused::InputLayout::Rows => (attrs.segments * len, len),
        crate::fused::InputLayout::Frames => (len, g.batch as u64 * len),
        crate::fused::InputLayout::Signal => (*input_shape.last().unwrap_or(&0) as u64, attrs.hop.unwrap_or(0)),
    };
    let input_len: u64 = input_shape.iter().map(|d| *d as u64).product();
    let pairs = attrs.segments.div_ceil(2);
    let spectra_len = if plan == Plan::MultiPass { g.batch as u64 * pairs * n } else { 0 };
    if input_len.max(spectra_len) > u32::MAX as u64 / 2 {
        return Err(format!("{} values are more than the kernels' 32-bit indexing takes", input_len.max(spectra_len)));
    }
    let scale = attrs.power_scale / attrs.segments as f64 * 0.5;
    let flag = |b: bool| if b { "true" } else { "false" }.to_string();
    let constants = vec![
        ("N", n.to_string()),
        ("LOG2N", n.trailing_zeros().to_string()),
        ("FRAME_LEN", len.to_string()),
        ("SEGMENTS", attrs.segments.to_string()),
        ("K", attrs.k.to_string()),
        ("BINS", bins.to_string()),
        ("WG", threads.to_string()),
        ("BPT", per_thread.to_string()),
        ("TW", per_thread.div_ceil(32).to_string()),
        ("PAIRS", pairs.to_string()),
        ("BATCH", g.batch.to_string()),
        ("BATCH_STRIDE", batch_stride.to_string()),
        ("SEGMENT_STRIDE", segment_stride.to_string()),
        ("HAS_WINDOW", flag(attrs.window)),
        ("DOUBLING", flag(attrs.doubling == Doubling::Rlx)),
        ("SCALE", format!("{:?}", scale as f32)),
        ("INTERLEAVED", flag(attrs.output_layout == OutputLayout::Interleaved)),
    ];
    Ok(Specialization {
        plan,
        constants,
        threads,
        groups: g.batch as u64,
        shared_bytes: if plan == Plan::OnePass { 8 * n } else { 8 * threads as u64 },
        input_len,
        window_len: if attrs.window { len } else { 1 },
        output_len: g.batch as u64 * 2 * attrs.k,
        spectra_len,
        log2n: n.trailing_zeros(),
    })
}

/// Replace every `{{NAME}}` of `template`; a placeholder left over is an error.
pub fn fill(template: &str, spec: &Specialization) -> Result<String, String> {
    fill_with(template, spec, &[])
}

/// [`fill`], with extra constants (the multi-pass plan's `STAGE`).
pub fn fill_with(template: &str, spec: &Specialization, extra: &[(&str, String)]) -> Result<String, String> {
    let mut text = template.to_string();
    for (name, value) in spec.constants.iter().map(|(n, v)| (*n, v)).chain(extra.iter().map(|(n, v)| (*n, v))) {
        text = text.replace(&format!("{{{{{name}}}}}"), value);
    }
    match text.find("{{") {
        Some(at) => Err(format!("kernel template has an unknown placeholder at `{}`", &text[at..(at + 24).min(text.len())])),
        None => Ok(text),
    }
}

/// Workgroups as (x, y): x at most 65535, as every backend allows.
pub fn grid(groups: u64) -> (u32, u32) {
    let x = groups.clamp(1, 65535);
    (x as u32, groups.div_ceil(x) as u32)
}

/// What a runtime needs to launch one specialised kernel.
pub fn manifest(target: &str, entry: &str, files: &[String], spec: &Specialization, attrs: &WelchPeaksAttrs) -> serde_json::Value {
    let (x, y) = grid(spec.groups);
    serde_json::json!({
        "target": target,
        "entry_point": entry,
        "files": files,
        "workgroup_size": [spec.threads, 1, 1],
        "grid": {"formula": "one workgroup per batch entry, x = min(batch, 65535), y = ceil(batch / x)", "batch": spec.groups, "dims": [x, y, 1]},
        "shared_memory_bytes": spec.shared_bytes,
        "plan": spec.plan,
        "spectra_len": spec.spectra_len,
        "bindings": [
            {"binding": 0, "name": "segs", "access": "read", "element": "f32", "len": spec.input_len},
            {"binding": 1, "name": "window", "access": "read", "element": "f32", "len": spec.window_len},
            {"binding": 2, "name": "peaks", "access": "read_write", "element": "f32", "len": spec.output_len},
        ],
        "specialization_constants": spec.constants.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        "attrs": attrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;


    fn attrs(n_fft: u64, k: u64) -> WelchPeaksAttrs {
        WelchPeaksAttrs::rlx(n_fft, 8, k)
    }

    #[test]
    fn limits_are_checked_with_a_reason() {
        assert!(specialize(&attrs(100, 4), &[16, 100]).unwrap_err().contains("power-of-two"));
        assert_eq!(specialize(&attrs(8192, 4), &[16, 8192]).unwrap().plan, Plan::MultiPass);
        assert!(specialize(&attrs(131072, 4), &[16, 131072]).unwrap_err().contains("at most 65536"));
        let s = specialize(&attrs(4096, 256), &[16, 4096]).unwrap();
        assert_eq!((s.threads, s.groups, s.shared_bytes), (256, 2, 32768));
        assert_eq!(specialize(&attrs(8, 5), &[8, 8]).unwrap().threads, 8);
    }

    #[test]
    fn every_placeholder_is_filled() {
        let s = specialize(&attrs(256, 16), &[64, 256]).unwrap();
        assert!(!wgsl::compile(&s).unwrap().wgsl.contains("{{"));
        assert!(!cuda::source(&s).unwrap().contains("{{"));
        assert!(fill("{{NOPE}}", &s).is_err());
        assert_eq!(grid(70000), (65535, 2));
        assert_eq!(grid(3), (3, 1));
    }
}

#[cfg(test)]
mod compile_tests {
    use super::*;
    use crate::fused::{ChainForm, InputLayout};

    #[test]
    fn wgsl_validates_and_writes_spirv_and_msl() {
        let attrs = WelchPeaksAttrs {
            form: ChainForm::SpectrogramTopk,
            input_layout: InputLayout::Signal,
            n_fft: 256,
            frame_len: 200,
            hop: Some(100),
            segments: 5,
            k: 16,
            window: true,
            power_scale: 1.0,
            doubling: Doubling::None,
            output_layout: OutputLayout::Planar,
            lowering: None,
        };
        let spec = specialize(&attrs, &[3, 600]).unwrap();
        let kernel = wgsl::compile(&spec).unwrap_or_else(|e| panic!("{e}"));
        let words = kernel.spirv().unwrap();
        assert_eq!(words[0], 0x0723_0203, "SPIR-V magic");
        let msl = kernel.msl().unwrap();
        assert!(msl.contains("kernel void welch_peaks"), "{msl}");
    }
}

#[cfg(test)]
mod nvrtc_tests {
    use super::*;
    use crate::fused::{ChainForm, InputLayout};

    /// Every geometry the kernels promise, for the GPUs CI targets. Skips with
    /// the reason where NVRTC is not installed (CI installs it).
    #[test]
    fn cuda_compiles_for_sm90_and_sm80() {
        if !cuda::nvrtc_available() {
            assert!(std::env::var("CI").is_err(), "NVRTC is required in CI");
            println!("SKIPPED NVRTC compile test: libnvrtc.so.12 not on LD_LIBRARY_PATH");
            return;
        }
        for (n, k, window, layout) in
            [(8, 5, false, InputLayout::Rows), (256, 16, true, InputLayout::Signal), (4096, 256, false, InputLayout::Frames), (16384, 300, true, InputLayout::Rows)]
        {
            let attrs = WelchPeaksAttrs {
                form: ChainForm::WelchPeaks,
                input_layout: layout,
                n_fft: n,
                frame_len: n,
                hop: Some(n / 2),
                segments: 8,
                k,
                window,
                power_scale: 1.0,
                doubling: Doubling::Rlx,
                output_layout: OutputLayout::Interleaved,
                lowering: None,
            };
            let shape: Vec<usize> = match layout {
                InputLayout::Rows => vec![16, n as usize],
                InputLayout::Frames => vec![8, 2, n as usize],
                InputLayout::Signal => vec![2, (7 * n / 2 + n) as usize],
            };
            let spec = specialize(&attrs, &shape).unwrap();
            for arch in ["sm_90", "sm_80"] {
                let (_, ptx, log) = cuda::compile(&spec, arch).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
                let entry = if n > MAX_ONE_PASS_N_FFT { ".entry peaks_of" } else { ".entry welch_peaks" };
                assert!(ptx.contains(entry), "n_fft {n} {arch}");
                assert!(log.contains("Used"), "ptxas reported nothing: {log}");
            }
        }
    }
}
