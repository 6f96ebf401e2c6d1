//! Lowering the fused op to native kernels: the kernel sources in
//! `kernels/`, specialised per fused op by replacing their `{{…}}`
//! placeholders, checked by their real compilers (naga for WGSL, which also
//! writes SPIR-V and Metal; NVRTC for CUDA), and described by a manifest.

pub mod cuda;
pub mod emit;
pub mod fft;
pub mod launch;
pub mod log_mel;
pub mod wgsl;

use crate::analysis::Target;
use crate::analysis::plan::{DeviceLimits, KernelGeometry, Unsupported, f32_type, plan};
use crate::fused::{Doubling, OutputLayout, WelchPeaksAttrs};
use serde::Serialize;

pub use crate::analysis::plan::FftPasses;
pub use fft::fft_radices;
pub use launch::{KernelBuffer, KernelEntry, Launch, buffers_of, launches};

/// How both ops' kernels load a windowed sample (`inf_as_nan`: ±∞ as NaN
/// under the op's `inf_is_nan`), one fragment per language pasted into
/// each op's kernels for `{{SAMPLES}}`: the Welch kernels' common part and
/// the log-mel kernel.
pub const CUDA_SAMPLES: &str = include_str!("../../kernels/samples.cuh");
/// [`CUDA_SAMPLES`]' twin in WGSL (and through naga, SPIR-V and Metal).
pub const WGSL_SAMPLES: &str = include_str!("../../kernels/samples.wgsl");

/// Where a specialised kernel finds its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bindings {
    /// A binding (or kernel argument) per operand: rlx-run, `--emit-kernels`.
    Buffers,
    /// RLX's arena, by the convention of its custom GPU kernels (rlx-wgpu's
    /// `WgpuGpuKernel`, rlx-cuda's `CudaGpuKernel`): every pass of a plan is
    /// an RLX op of its own; `stage` is the radix-2 stage a CUDA multi-pass
    /// `stage` op runs (0 for the other ops and in WGSL).
    RlxArena { stage: u32 },
}

/// Why a kernel could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LowerError {
    /// No kernel takes the op on this target and device.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// The target runs the op without a GPU kernel.
    #[error("{0} runs the fused op without a GPU kernel")]
    NotAGpuTarget(Target),
    /// CUDA's radix-2 multi-pass FFT has no WGSL kernel (WGSL plans take the four-step one).
    #[error("the WGSL kernels have no {0:?} FFT")]
    NoWgslForm(FftPasses),
    /// CUDA's packed one-segment form has no WGSL kernel (WGSL plans never pack).
    #[error("the WGSL kernels take no packed one-segment FFT (a CUDA form)")]
    NoWgslPackedSegment,
    #[error("kernel template has an unknown placeholder at `{0}`")]
    Placeholder(String),
    #[error("WGSL kernel does not {stage}: {message}")]
    Wgsl { stage: &'static str, message: String },
    #[error("{writer} writer: {message}")]
    Writer { writer: &'static str, message: String },
    #[error("NVRTC (libnvrtc.so.12) not found: put its folder on LD_LIBRARY_PATH (pip wheel nvidia-cuda-nvrtc-cu12)")]
    NvrtcMissing,
    #[error("NVRTC could not compile the kernel for {arch}: {message}")]
    Nvrtc { arch: String, message: String },
    #[error("the kernel spills registers on {arch}: {line}")]
    Spill { arch: String, line: String },
    /// The log-mel op's operand does not fit its attributes (boxed: it
    /// holds two tensor types, and every runtime error would grow with it).
    #[error("the operand does not fit the op: {0}")]
    LogMelOperand(Box<crate::fused::LogMelOperandError>),
    #[error("fused op with dynamic input dims: kernels are specialised for a static shape")]
    DynamicInput,
    #[error("the {0} kernels need rlx-opt built with the `{0}` feature")]
    NotBuilt(&'static str),
}

impl From<crate::fused::LogMelOperandError> for LowerError {
    fn from(e: crate::fused::LogMelOperandError) -> Self {
        LowerError::LogMelOperand(Box::new(e))
    }
}

/// One fused op made concrete for one input shape: its plan, and the value
/// of every kernel placeholder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Specialization {
    pub kernel: KernelGeometry,
    /// The FFT's length (the `N` constant), for the FFT front end.
    #[serde(skip)]
    pub n_fft: u64,
    /// Placeholder → value, in the order the kernels declare them.
    pub constants: Vec<(&'static str, String)>,
    /// The WGSL top-k takes subgroup operations (wgpu's `SUBGROUP`
    /// feature) instead of a tree in workgroup memory. Off unless the
    /// runtime that builds the module has opened its device with them:
    /// emitted kernels and RLX's sessions take the portable form.
    #[serde(skip)]
    pub subgroups: bool,
}

impl Specialization {
    /// The length of the complex FFT the kernels run: n_fft, or half of it
    /// where the plan packs a one-segment entry ([`KernelGeometry::packed`]).
    pub fn fft_len(&self) -> u64 {
        self.kernel.fft_len(self.n_fft)
    }
}

/// The kernel plan of `attrs` on an input of `input_shape` for a `target`
/// device with `limits`, specialised.
pub fn specialize_for(attrs: &WelchPeaksAttrs, input_shape: &[usize], target: Target, limits: &DeviceLimits) -> Result<Specialization, LowerError> {
    let planned = plan(attrs, &f32_type(input_shape), target, limits)?;
    let kernel = planned.kernel.ok_or(LowerError::NotAGpuTarget(target))?;
    Ok(specialize(attrs, kernel))
}

/// Fix every constant of the kernels for a planned geometry.
pub fn specialize(attrs: &WelchPeaksAttrs, kernel: KernelGeometry) -> Specialization {
    let n = attrs.n_fft;
    let bins = n / 2 + 1;
    let per_thread = bins.div_ceil(kernel.threads as u64);
    // Bin 0's weight, never doubled: the kernels double the others
    // (`DOUBLING`); halved for the pair formula, as the CPU kernel's. The
    // norm's factor is the amplitude's (`AMP`), applied before squaring.
    let scale = power_weight(attrs, 0, bins as usize) * 0.5;
    let flag = |b: bool| if b { "true" } else { "false" }.to_string();
    let mut constants = vec![
        ("N", n.to_string()),
        ("LOG2N", kernel.log2n.to_string()),
        ("FRAME_LEN", attrs.frame_len.to_string()),
        ("SEGMENTS", attrs.segments.to_string()),
        ("K", attrs.k.to_string()),
        ("BINS", bins.to_string()),
        ("WG", kernel.threads.to_string()),
        ("BPT", per_thread.to_string()),
        ("TW", per_thread.div_ceil(32).to_string()),
        ("PAIRS", attrs.segments.div_ceil(2).to_string()),
        ("CHUNKS", kernel.chunks.to_string()),
        ("PAIRS_PER_CHUNK", kernel.pairs_per_chunk.to_string()),
        ("BATCH", kernel.groups.to_string()),
        ("BATCH_STRIDE", kernel.batch_stride.to_string()),
        ("SEGMENT_STRIDE", kernel.segment_stride.to_string()),
        ("HAS_WINDOW", flag(attrs.window)),
        ("DOUBLING", flag(attrs.doubling == Doubling::Rlx)),
        ("SCALE", format!("{:?}", scale as f32)),
        ("AMP", format!("{:?}", crate::fused::amplitude_scale(attrs.power_scale))),
        ("INF_IS_NAN", flag(attrs.inf_is_nan)),
        ("INTERLEAVED", flag(attrs.output_layout == OutputLayout::Interleaved)),
    ];
    if let Some(f) = kernel.fft.four_step() {
        let [columns, rows] = f.passes(kernel.threads);
        constants.extend([
            ("N1", f.n1.to_string()),
            ("N2", f.n2.to_string()),
            ("COL_LANES", columns.lanes.to_string()),
            ("COL_FFTS", columns.ffts.to_string()),
            ("ROW_LANES", rows.lanes.to_string()),
            ("ROW_FFTS", rows.ffts.to_string()),
            ("FS_POINTS", f.buffer_points(kernel.threads, |len| len).to_string()),
        ]);
    }
    Specialization { kernel, n_fft: n, constants, subgroups: false }
}

/// The weight of bin `bin`'s power `|a·X[bin]|²` in the op's spectrum of
/// `bins` bins, `a` the norm's amplitude factor ([`crate::fused::amplitude_scale`],
/// applied to the transform before squaring): one over the segment count,
/// doubled for every bin but the first and last under RLX's doubling. One
/// formula for every kernel: the reference and CPU kernels
/// (`runtime::welch`) weigh each bin with it, and the GPU kernels get bin
/// 0's as `SCALE` (doubling the others themselves) and `a` as `AMP`.
pub fn power_weight(attrs: &WelchPeaksAttrs, bin: usize, bins: usize) -> f64 {
    let doubled = attrs.doubling == Doubling::Rlx && bin != 0 && bin + 1 != bins;
    1.0 / attrs.segments as f64 * if doubled { 2.0 } else { 1.0 }
}

/// Replace every `{{NAME}}` of `template`; a placeholder left over is an error.
pub fn fill(template: &str, spec: &Specialization) -> Result<String, LowerError> {
    fill_constants(template, &spec.constants)
}

/// [`fill`] with a list of placeholder values (the log-mel kernels' own).
pub fn fill_constants(template: &str, constants: &[(&'static str, String)]) -> Result<String, LowerError> {
    let text = fill_constants_partially(template, constants);
    match text.find("{{") {
        // 24 characters, not bytes: the templates' comments hold `·`, `−`
        // and `—`, and a byte offset can fall inside one of them.
        Some(at) => Err(LowerError::Placeholder(text[at..].chars().take(24).collect())),
        None => Ok(text),
    }
}

/// `template` with the placeholders of `constants` filled, others left
/// for a later [`fill_constants`].
pub fn fill_constants_partially(template: &str, constants: &[(&'static str, String)]) -> String {
    let mut text = template.to_string();
    for (name, value) in constants {
        text = text.replace(&format!("{{{{{name}}}}}"), value);
    }
    text
}

/// Workgroups as (x, y): x at most 65535, as every backend allows.
pub fn grid(groups: u64) -> (u32, u32) {
    let x = groups.clamp(1, 65535);
    (x as u32, groups.div_ceil(x) as u32)
}

/// What a runtime needs to launch one specialised kernel: every binding the
/// plan's entry points use, with its length, and every launch in order.
pub fn manifest(target: &str, entry: &str, files: &[String], spec: &Specialization, attrs: &WelchPeaksAttrs) -> serde_json::Value {
    let k = &spec.kernel;
    let (x, y) = grid(k.groups);
    let launches = launches(k);
    let mut bindings = Vec::new();
    for buffer in buffers_of(&launches) {
        let access = if buffer.written() { "read_write" } else { "read" };
        bindings.push(serde_json::json!({"binding": buffer.binding(), "name": buffer.name(), "access": access, "element": buffer.element(), "len": buffer.len(k)}));
    }
    let launches: Vec<serde_json::Value> = launches
        .iter()
        .map(|l| {
            let (x, y) = l.grid();
            serde_json::json!({"entry_point": l.entry.name(), "workgroups": l.groups, "dims": [x, y, 1]})
        })
        .collect();
    let mut manifest = serde_json::json!({
        "target": target,
        "entry_point": entry,
        "files": files,
        "workgroup_size": [k.threads, 1, 1],
        "grid": {"formula": "one workgroup per batch entry, x = min(batch, 65535), y = ceil(batch / x)", "batch": k.groups, "dims": [x, y, 1]},
        "shared_memory_bytes": k.shared_bytes,
        "plan": k.plan,
        "fft": k.fft,
        "chunks": k.chunks,
        "pairs_per_chunk": k.pairs_per_chunk,
        "spectra_len": k.spectra_len,
        "launches": launches,
        "bindings": bindings,
        "specialization_constants": spec.constants.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        "attrs": attrs,
    });
    // Written only where CUDA packs a one-segment entry (as the log-mel
    // manifests' `fft_packed`): every other manifest stays as it was.
    if k.packed {
        manifest["fft_packed"] = serde_json::Value::Bool(true);
        manifest["fft_len"] = spec.fft_len().into();
    }
    manifest
}

#[cfg(test)]
mod fill_tests {
    use super::*;

    fn any_spec() -> Specialization {
        let attrs = WelchPeaksAttrs::rlx(256, 8, 16);
        let kernel = plan(&attrs, &f32_type(&[64, 256]), Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap().kernel.unwrap();
        specialize(&attrs, kernel)
    }

    /// CUDA's packed one-segment form has no WGSL twin: a packed plan is
    /// refused, not lowered as a full-length FFT.
    #[test]
    fn the_wgsl_source_refuses_a_packed_plan() {
        let mut spec = any_spec();
        assert!(wgsl::source(&spec, Bindings::Buffers).is_ok());
        spec.kernel.packed = true;
        assert!(matches!(wgsl::source(&spec, Bindings::Buffers), Err(LowerError::NoWgslPackedSegment)));
    }

    /// A placeholder left over among multi-byte characters (the templates'
    /// `·`, `−`, `—`) is named, 24 characters of it: the 24th byte after it
    /// falls inside a `·` here.
    #[test]
    fn a_leftover_placeholder_among_multibyte_characters_is_an_error() {
        let template = format!("{{{{Z}}}}{}", "·".repeat(20));
        match fill(&template, &any_spec()) {
            Err(LowerError::Placeholder(at)) => assert_eq!(at, format!("{{{{Z}}}}{}", "·".repeat(19))),
            other => panic!("{other:?}"),
        }
        for dash in ["−", "—"] {
            let template = format!("// {dash} {{{{NOPE}}}} {}", dash.repeat(30));
            assert!(matches!(fill(&template, &any_spec()), Err(LowerError::Placeholder(at)) if at.starts_with("{{NOPE}}")));
        }
    }
}

#[cfg(all(test, feature = "wgpu", feature = "cuda"))]
mod tests {
    use super::*;
    use crate::analysis::plan::DeviceLimits;

    fn spec_on(target: Target, n_fft: u64, k: u64, rows: usize) -> Specialization {
        specialize_for(&WelchPeaksAttrs::rlx(n_fft, 8, k), &[rows, n_fft as usize], target, &DeviceLimits::assumed(target)).unwrap()
    }

    fn spec(n_fft: u64, k: u64, rows: usize) -> Specialization {
        spec_on(Target::Cuda, n_fft, k, rows)
    }

    #[test]
    fn every_placeholder_is_filled() {
        let s = spec(256, 16, 64);
        wgsl::compile(&s).unwrap();
        cuda::source(&s).unwrap();
        assert!(matches!(fill("{{NOPE}}", &s), Err(LowerError::Placeholder(_))));
        assert_eq!(grid(70000), (65535, 2));
        assert_eq!(grid(3), (3, 1));
    }

    /// Every multi-pass plan of every length of 2s, 3s and 5s the plan
    /// takes, both CUDA forms (four-step, radix-2 stages), has its source
    /// (NVRTC compiles the plan cases: tests/plans.rs).
    #[test]
    fn every_multi_pass_length_lowers() {
        let four_step = DeviceLimits { four_step: true, ..DeviceLimits::assumed(Target::Cuda) };
        let stages = DeviceLimits { four_step: false, ..four_step };
        for n in (2..=65536u64).filter(|n| crate::analysis::plan::fft_radices(*n).is_ok()) {
            let attrs = WelchPeaksAttrs { plan: Some(crate::fused::PlanName::Multipass), ..WelchPeaksAttrs::rlx(n, 2, 1) };
            for (target, limits) in [(Target::Cuda, four_step), (Target::Cuda, stages), (Target::Wgpu, DeviceLimits::assumed(Target::Wgpu))] {
                let Ok(s) = specialize_for(&attrs, &[2, n as usize], target, &limits) else { continue };
                let source = if target == Target::Cuda { cuda::source(&s) } else { wgsl::source(&s, Bindings::Buffers) };
                source.unwrap_or_else(|e| panic!("n {n} on {} ({:?}): {e}", target.name(), s.kernel.fft));
            }
        }
    }

    #[test]
    fn the_manifest_lists_every_binding_of_the_plan() {
        let one = manifest("spirv", wgsl::ENTRY, &[], &spec(256, 16, 64), &WelchPeaksAttrs::rlx(256, 8, 16));
        assert_eq!(one["bindings"].as_array().unwrap().len(), 3);
        let listed = |m: &serde_json::Value, list: &str, key: &str| -> Vec<String> { m[list].as_array().unwrap().iter().map(|b| b[key].as_str().unwrap().to_string()).collect() };
        let multi = manifest("spirv", "columns", &[], &spec_on(Target::Wgpu, 8192, 16, 16), &WelchPeaksAttrs::rlx(8192, 8, 16));
        assert_eq!(listed(&multi, "bindings", "name"), ["segs", "window", "peaks", "spectra"]);
        assert_eq!(listed(&multi, "launches", "entry_point"), ["columns", "rows", "peaks_of"]);
        // CUDA: the four-step FFT by default, as WGSL; its radix-2 stages
        // (RLX_OPT_CUDA_FOUR_STEP=0) a launch each.
        let cuda = manifest("cuda", "columns", &[], &spec(8192, 16, 16), &WelchPeaksAttrs::rlx(8192, 8, 16));
        assert_eq!(listed(&cuda, "bindings", "name"), ["segs", "window", "peaks", "spectra"]);
        assert_eq!(listed(&cuda, "launches", "entry_point"), ["columns", "rows", "peaks_of"]);
        let limits = DeviceLimits { four_step: false, ..DeviceLimits::assumed(Target::Cuda) };
        let stages = specialize_for(&WelchPeaksAttrs::rlx(8192, 8, 16), &[16, 8192], Target::Cuda, &limits).unwrap();
        let cuda = manifest("cuda", "load", &[], &stages, &WelchPeaksAttrs::rlx(8192, 8, 16));
        assert_eq!(listed(&cuda, "launches", "entry_point").len(), 2 + 13);
    }
}

#[cfg(all(test, feature = "wgpu"))]
mod compile_tests {
    use super::*;
    use crate::analysis::plan::DeviceLimits;
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
            // RLX's `Sub(x, x)` plane: the kernels' ±∞ test validates too.
            inf_is_nan: true,
            doubling: Doubling::None,
            output_layout: OutputLayout::Planar,
            lowering: None,
            plan: None,
        };
        let spec = specialize_for(&attrs, &[3, 600], Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap();
        let kernel = wgsl::compile(&spec).unwrap_or_else(|e| panic!("{e}"));
        let words = kernel.spirv().unwrap();
        assert_eq!(words[0], 0x0723_0203, "SPIR-V magic");
        let msl = kernel.msl().unwrap();
        assert!(msl.contains("kernel void welch_peaks"), "{msl}");
        // The top-k with subgroup operations: validated only with them
        // allowed, and written as SPIR-V and Metal (simd-group functions).
        let subgroups = Specialization { subgroups: true, ..spec };
        let kernel = wgsl::compile(&subgroups).unwrap_or_else(|e| panic!("{e}"));
        assert!(kernel.wgsl.contains("subgroupMax"));
        assert!(kernel.spirv().unwrap().len() > 5);
        assert!(kernel.msl().unwrap().contains("simd_max"));
        assert!(matches!(wgsl::validate(kernel.wgsl.clone()), Err(LowerError::Wgsl { stage: "validate", .. })), "the subgroup form needs the capability");
    }
}

#[cfg(all(test, feature = "cuda"))]
mod nvrtc_tests {
    use super::*;
    use crate::analysis::plan::{DeviceLimits, MAX_ONE_PASS_N_FFT};
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
                hop: (layout == InputLayout::Signal).then_some(n / 2),
                segments: 8,
                k,
                window,
                power_scale: 1.0,
                inf_is_nan: window,
                doubling: Doubling::Rlx,
                output_layout: OutputLayout::Interleaved,
                lowering: None,
                plan: None,
            };
            let shape: Vec<usize> = match layout {
                InputLayout::Rows => vec![16, n as usize],
                InputLayout::Frames => vec![8, 2, n as usize],
                InputLayout::Signal => vec![2, (7 * n / 2 + n) as usize],
            };
            let spec = specialize_for(&attrs, &shape, Target::Cuda, &DeviceLimits::assumed(Target::Cuda)).unwrap();
            for arch in ["sm_90", "sm_80"] {
                let (_, ptx, log) = cuda::compile(&spec, arch).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
                let entry = if n > MAX_ONE_PASS_N_FFT { ".entry peaks_of" } else { ".entry welch_peaks" };
                assert!(ptx.contains(entry), "n_fft {n} {arch}");
                assert!(log.contains("Used"), "ptxas reported nothing: {log}");
            }
        }
    }
}
