//! Lowering the fused log-mel op to its GPU kernels: `kernels/log_mel.wgsl`
//! and `kernels/log_mel.cu`, each with the mixed-radix FFT shared by the GPU
//! kernels of its language (`kernels/fft_mixed_radix.wgsl`,
//! `kernels/fft_mixed_radix.cuh`) pasted in for `{{FFT}}`, specialised per
//! op and input shape, with their launch list ([`launches`]): `mel_bands`
//! (each filter's band, once per run), then `log_mel` (a workgroup per
//! frame, each with its own transform). The plan (FFT radices, threads, workgroup memory) is
//! `analysis::plan::log_mel_plan`'s.

use super::{Bindings, LowerError};
use crate::analysis::Target;
use crate::analysis::plan::log_mel::LOG_MEL_BANDS_THREADS;
use crate::analysis::plan::{DeviceLimits, LogMelPlan, log_mel_plan, log_mel_sizes};
use crate::fused::{LogMelAttrs, LogMelInput};
use crate::ir::{DType, TensorType};

pub const WGSL_TEMPLATE: &str = include_str!("../../kernels/log_mel.wgsl");
/// The operands as bindings of their own, or in RLX's arena, pasted in for `{{IO}}`.
pub const WGSL_IO_BUFFERS: &str = include_str!("../../kernels/log_mel_io_buffers.wgsl");
pub const WGSL_IO_RLX: &str = include_str!("../../kernels/log_mel_io_rlx.wgsl");
/// The WGSL kernels' FFT front end, pasted in for `{{FFT}}` ([`super::fft`]).
pub const WGSL_FFT: &str = super::fft::WGSL;
pub const CUDA_TEMPLATE: &str = include_str!("../../kernels/log_mel.cu");
/// The CUDA entry points, with an argument per operand or in RLX's
/// signature, pasted in for `{{ENTRIES}}`.
pub const CUDA_ENTRIES: &str = include_str!("../../kernels/log_mel_entries.cuh");
pub const CUDA_ENTRIES_RLX: &str = include_str!("../../kernels/log_mel_entries_rlx.cuh");
/// The CUDA kernels' FFT front end, pasted in for `{{FFT}}` ([`super::fft`]).
pub const CUDA_FFT: &str = super::fft::CUDA;

pub use super::fft::fft_radices;

/// An entry point of the log-mel kernels, the same name in WGSL and CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogMelEntry {
    /// One thread per filter: its band (first, end) of non-zero weights.
    MelBands,
    /// One workgroup per frame: FFT, power, bands, log, floor.
    LogMel,
}

impl LogMelEntry {
    pub const ALL: [LogMelEntry; 2] = [LogMelEntry::MelBands, LogMelEntry::LogMel];

    pub const fn name(self) -> &'static str {
        match self {
            LogMelEntry::MelBands => "mel_bands",
            LogMelEntry::LogMel => "log_mel",
        }
    }

    /// The buffers it binds, in the order of its CUDA arguments: those it
    /// reads, then the one it writes.
    pub const fn buffers(self) -> &'static [LogMelBuffer] {
        use LogMelBuffer::*;
        match self {
            LogMelEntry::MelBands => &[Filters, Bands],
            LogMelEntry::LogMel => &[Frames, Window, Filters, Bands, Mels],
        }
    }
}

/// A buffer of the log-mel kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogMelBuffer {
    /// Operand 0: frames or signal.
    Frames,
    /// Operand 2, or one value of 1 when the op has no window.
    Window,
    /// The result, `[rows, n_mels]`.
    Mels,
    /// Operand 1, `[n_mels, bins]`.
    Filters,
    /// Each filter's band, `[n_mels]` (first, end) pairs of u32: two f32-sized values each.
    Bands,
}

impl LogMelBuffer {
    pub const ALL: [LogMelBuffer; 5] = [LogMelBuffer::Frames, LogMelBuffer::Window, LogMelBuffer::Mels, LogMelBuffer::Filters, LogMelBuffer::Bands];

    /// Its binding in WGSL's group 0 (and its Metal buffer index): the
    /// Welch kernels' numbers for the same roles, so one Metal map serves both.
    pub const fn binding(self) -> u32 {
        match self {
            LogMelBuffer::Frames => 0,
            LogMelBuffer::Window => 1,
            LogMelBuffer::Mels => 2,
            LogMelBuffer::Filters => 3,
            LogMelBuffer::Bands => 5,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            LogMelBuffer::Frames => "frames",
            LogMelBuffer::Window => "window",
            LogMelBuffer::Mels => "mels",
            LogMelBuffer::Filters => "filters",
            LogMelBuffer::Bands => "bands",
        }
    }

    /// Its 4-byte values under `spec`.
    pub fn len(self, spec: &LogMelSpec) -> u64 {
        match self {
            LogMelBuffer::Frames => spec.input_len,
            LogMelBuffer::Window => spec.window_len,
            LogMelBuffer::Mels => spec.output_len,
            LogMelBuffer::Filters => spec.filters_len,
            LogMelBuffer::Bands => 2 * spec.mels,
        }
    }
}

/// One launch of the log-mel kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogMelLaunch {
    pub entry: LogMelEntry,
    pub groups: u64,
    /// Threads of each workgroup (block).
    pub threads: u32,
}

impl LogMelLaunch {
    pub fn grid(&self) -> (u32, u32) {
        super::grid(self.groups)
    }
}

/// One log-mel op made concrete for one input shape.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMelSpec {
    pub plan: LogMelPlan,
    /// Result rows (frames): `plan.frames_per_group` a `log_mel` workgroup.
    pub rows: u64,
    pub mels: u64,
    pub input_len: u64,
    pub window_len: u64,
    pub filters_len: u64,
    pub output_len: u64,
    /// Placeholder → value.
    pub constants: Vec<(&'static str, String)>,
}

/// The op with `attrs` on an input of `input_shape` (at least one row),
/// on `target` with `limits`: its plan, checked against the operands'
/// sizes, and every placeholder's value.
pub fn specialize(attrs: &LogMelAttrs, input_shape: &[usize], target: Target, limits: &DeviceLimits) -> Result<LogMelSpec, LowerError> {
    let plan = log_mel_plan(attrs, target, limits)?;
    let ty = TensorType::new(&input_shape.iter().map(|d| *d as u64).collect::<Vec<_>>(), DType::F32);
    let lead = attrs.lead_of(&ty)?;
    let lead: Vec<u64> = lead.iter().map(|d| d.as_static().ok_or(LowerError::DynamicInput)).collect::<Result<_, _>>()?;
    let rows: u64 = lead.iter().product();
    let signal_len = *input_shape.last().unwrap_or(&0) as u64;
    let input_len: u64 = input_shape.iter().map(|d| *d as u64).product();
    let (mels, bins) = (attrs.n_mels, attrs.bins());
    let output_len = rows * mels;
    let window_len = if attrs.window { attrs.frame_len } else { 1 };
    log_mel_sizes(attrs, &ty, limits)?;
    let (batch, hop) = match attrs.input_layout {
        LogMelInput::Frames => (rows.max(1), 0),
        LogMelInput::Signal => (lead[1..].iter().product::<u64>().max(1), attrs.hop.unwrap_or(0)),
    };
    let flag = |b: bool| if b { "true" } else { "false" }.to_string();
    let mut constants = super::fft::constants(&plan.radices);
    constants.extend([
        ("FRAME_LEN", attrs.frame_len.to_string()),
        ("BINS", bins.to_string()),
        ("MELS", mels.to_string()),
        ("N_FFT", attrs.n_fft.to_string()),
        ("PACKED", flag(plan.packed)),
        ("ROWS", rows.to_string()),
        ("WG", plan.threads.to_string()),
        ("FRAMES_PER_BLOCK", plan.frames_per_group.to_string()),
        ("LOG_MEL_WARPS", u8::from(plan.warps).to_string()),
        ("BANDS_WG", LOG_MEL_BANDS_THREADS.to_string()),
        ("SIGNAL", flag(attrs.input_layout == LogMelInput::Signal)),
        ("BATCH", batch.to_string()),
        ("SIGNAL_LEN", signal_len.to_string()),
        ("HOP", hop.to_string()),
        ("HAS_WINDOW", flag(attrs.window)),
        ("AMP", format!("{:?}", attrs.kernel_amplitude())),
        ("TRANSFORM_SCALE", format!("{:?}", attrs.transform_scale())),
        ("INF_IS_NAN", flag(attrs.inf_is_nan)),
    ]);
    Ok(LogMelSpec { plan, rows, mels, input_len, window_len, filters_len: mels * bins, output_len, constants })
}

/// The launches of one op run, in order: the bands, then the frames.
pub fn launches(spec: &LogMelSpec) -> Vec<LogMelLaunch> {
    vec![
        LogMelLaunch { entry: LogMelEntry::MelBands, groups: spec.mels.div_ceil(LOG_MEL_BANDS_THREADS as u64), threads: LOG_MEL_BANDS_THREADS },
        LogMelLaunch { entry: LogMelEntry::LogMel, groups: spec.rows.div_ceil(spec.plan.frames_per_group as u64), threads: spec.plan.threads },
    ]
}

/// The specialised WGSL (both entry points), its operands bindings of their own.
pub fn wgsl_source(spec: &LogMelSpec) -> Result<String, LowerError> {
    wgsl_source_with(spec, Bindings::Buffers)
}

/// The specialised WGSL (both entry points) for operands bound as
/// `bindings`: in RLX's arena each entry point is an op of its own
/// (`kernels/log_mel_io_rlx.wgsl` lists their operands).
pub fn wgsl_source_with(spec: &LogMelSpec, bindings: Bindings) -> Result<String, LowerError> {
    let fft = super::fft::wgsl_twiddles(WGSL_FFT, spec.plan.twiddle_table);
    let io = match bindings {
        Bindings::Buffers => WGSL_IO_BUFFERS,
        Bindings::RlxArena { .. } => WGSL_IO_RLX,
    };
    super::fill_constants(&WGSL_TEMPLATE.replace("{{IO}}", io).replace("{{FFT}}", &fft).replace("{{SAMPLES}}", super::WGSL_SAMPLES), &spec.constants)
}

/// The specialised CUDA source (both entry points), with the FFT's
/// twiddle table and passes ([`super::fft::cuda_constants`]).
pub fn cuda_source(spec: &LogMelSpec) -> Result<String, LowerError> {
    cuda_source_with(spec, Bindings::Buffers)
}

/// [`cuda_source`] for operands bound as `bindings`: in RLX's arena the
/// entry points are `rlx_mel_bands` and `rlx_log_mel` ([`rlx_entry`]).
pub fn cuda_source_with(spec: &LogMelSpec, bindings: Bindings) -> Result<String, LowerError> {
    let fft = super::fill_constants_partially(CUDA_FFT, &super::fft::cuda_constants(&spec.plan.radices));
    let entries = super::cuda::entries_for(bindings, CUDA_ENTRIES, CUDA_ENTRIES_RLX);
    super::fill_constants(&CUDA_TEMPLATE.replace("{{ENTRIES}}", &entries).replace("{{FFT}}", &fft).replace("{{SAMPLES}}", super::CUDA_SAMPLES), &spec.constants)
}

/// The entry point RLX launches for `entry`.
pub fn rlx_entry(entry: LogMelEntry) -> String {
    format!("rlx_{}", entry.name())
}

/// The specialised WGSL parsed and validated by naga (which writes its
/// SPIR-V and Metal: `spirv()`, `msl()`).
#[cfg(feature = "wgpu")]
pub fn compile_wgsl(spec: &LogMelSpec) -> Result<super::wgsl::Kernel, LowerError> {
    compile_wgsl_with(spec, Bindings::Buffers)
}

/// [`compile_wgsl`] for operands bound as `bindings`.
#[cfg(feature = "wgpu")]
pub fn compile_wgsl_with(spec: &LogMelSpec, bindings: Bindings) -> Result<super::wgsl::Kernel, LowerError> {
    super::wgsl::validate(wgsl_source_with(spec, bindings)?)
}

/// The specialised CUDA compiled by NVRTC for `arch`: source, PTX, log.
#[cfg(feature = "cuda")]
pub fn compile_cuda(spec: &LogMelSpec, arch: &str) -> Result<(String, String, String), LowerError> {
    compile_cuda_with(spec, Bindings::Buffers, arch)
}

/// [`compile_cuda`] for operands bound as `bindings`.
#[cfg(feature = "cuda")]
pub fn compile_cuda_with(spec: &LogMelSpec, bindings: Bindings, arch: &str) -> Result<(String, String, String), LowerError> {
    super::cuda::compile_source(cuda_source_with(spec, bindings)?, "log_mel.cu", arch, &|_| false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(attrs: &LogMelAttrs, shape: &[usize]) -> LogMelSpec {
        specialize(attrs, shape, Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap()
    }

    #[test]
    fn every_placeholder_is_filled_and_the_launches_cover_the_rows() {
        let attrs = LogMelAttrs::frames(400, 80);
        let s = spec(&attrs, &[37, 400]);
        assert_eq!((s.rows, s.output_len), (37, 37 * 80));
        let wgsl = wgsl_source(&s).unwrap();
        // 400 packs into a complex FFT of 200 = 4·2·5·5: the stages with
        // their spans, and the digit reversal, last stage first.
        let stages = "fft_stage4(tid, 1u);\n    workgroupBarrier();\n    fft_stage2(tid, 4u);\n    workgroupBarrier();\n    fft_stage5(tid, 8u);\n    workgroupBarrier();\n    fft_stage5(tid, 40u);";
        assert!(wgsl.contains(stages) && wgsl.contains("position += (rest % 5u) * 40u;"), "{wgsl}");
        assert!(wgsl.contains("const FFT_N: u32 = 200u;") && wgsl.contains("const N_FFT: u32 = 400u;") && wgsl.contains("const PACKED: bool = true;"), "{wgsl}");
        let cuda = cuda_source(&s).unwrap();
        assert!(cuda.contains("#define FFT_RADICES { 4u, 2u, 5u, 5u }") && cuda.contains("#define FFT_SPANS { 1u, 4u, 8u, 40u }"), "{cuda}");
        // A workgroup per frame.
        let l = launches(&s);
        assert_eq!(l.iter().map(|l| (l.entry, l.groups)).collect::<Vec<_>>(), [(LogMelEntry::MelBands, 2), (LogMelEntry::LogMel, 37)]);
        assert!(cuda.contains("#define LOG_MEL_WARPS 0") && cuda.contains("#define FRAMES_PER_BLOCK 1u"), "{cuda}");
        // CUDA's warp form, where asked: eight frames a block of eight warps.
        let asked = DeviceLimits { log_mel_warps: true, ..DeviceLimits::assumed(Target::Cuda) };
        let warps = specialize(&attrs, &[37, 400], Target::Cuda, &asked).unwrap();
        let l = launches(&warps);
        assert_eq!(l.iter().map(|l| (l.entry, l.groups, l.threads)).collect::<Vec<_>>(), [(LogMelEntry::MelBands, 2, 64), (LogMelEntry::LogMel, 5, 256)]);
        let cuda = cuda_source(&warps).unwrap();
        assert!(cuda.contains("#define LOG_MEL_WARPS 1") && cuda.contains("#define FRAMES_PER_BLOCK 8u"), "{cuda}");
        // An odd length: the full-length FFT, unpacked.
        let odd = spec(&LogMelAttrs::frames(375, 40), &[3, 375]);
        let wgsl = wgsl_source(&odd).unwrap();
        assert!(wgsl.contains("const FFT_N: u32 = 375u;") && wgsl.contains("const PACKED: bool = false;"), "{wgsl}");
    }

    #[test]
    fn lengths_with_a_factor_above_5_are_refused_by_name() {
        let e = specialize(&LogMelAttrs::frames(98, 10), &[4, 98], Target::Wgpu, &DeviceLimits::assumed(Target::Wgpu)).unwrap_err();
        assert!(e.to_string().contains("prime factor above 5 (7)"), "{e}");
        assert!(fft_radices(202).unwrap_err().to_string().contains("(101)"));
    }
}

#[cfg(all(test, feature = "wgpu"))]
mod compile_tests {
    use super::*;

    /// naga validates the kernel and writes SPIR-V and Metal for both entry points.
    #[test]
    fn wgsl_validates_and_writes_spirv_and_msl() {
        for (n, window, layout) in [(400, false, LogMelInput::Frames), (1000, true, LogMelInput::Signal), (64, true, LogMelInput::Frames), (375, true, LogMelInput::Frames)] {
            let attrs = LogMelAttrs {
                input_layout: layout,
                hop: (layout == LogMelInput::Signal).then_some(160),
                frames: (layout == LogMelInput::Signal).then_some(5),
                window,
                ..LogMelAttrs::frames(n, 80)
            };
            let shape = if layout == LogMelInput::Signal { vec![2, 4 * 160 + n as usize] } else { vec![3, n as usize] };
            let s = specialize(&attrs, &shape, Target::Metal, &DeviceLimits::assumed(Target::Metal)).unwrap();
            let kernel = compile_wgsl(&s).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
            assert_eq!(kernel.spirv().unwrap()[0], 0x0723_0203, "SPIR-V magic");
            let msl = kernel.msl().unwrap();
            assert!(msl.contains("kernel void log_mel") && msl.contains("kernel void mel_bands"), "{msl}");
            // RLX's arena form: one storage window and the params.
            let rlx = compile_wgsl_with(&s, Bindings::RlxArena { stage: 0 }).unwrap_or_else(|e| panic!("n_fft {n} in RLX's arena: {e}"));
            assert!(rlx.wgsl.contains("var<storage, read_write> arena") && !rlx.wgsl.contains("var<storage, read> frames"), "{}", rlx.wgsl);
        }
    }
}

#[cfg(all(test, feature = "cuda"))]
mod nvrtc_tests {
    use super::*;

    /// The CUDA kernel compiles for sm_90 and sm_80 without spills, at
    /// Whisper's geometry and the longest FFT. Skips where NVRTC is missing (not in CI).
    #[test]
    fn cuda_compiles_for_sm90_and_sm80() {
        if !super::super::cuda::nvrtc_available() {
            assert!(std::env::var("CI").is_err(), "NVRTC is required in CI");
            println!("SKIPPED NVRTC compile test: libnvrtc.so.12 not on LD_LIBRARY_PATH");
            return;
        }
        // Both forms (the warp form where the FFT takes it: not 3000's 1,500 points).
        let warps = DeviceLimits { log_mel_warps: true, ..DeviceLimits::assumed(Target::Cuda) };
        let blocks = DeviceLimits { log_mel_warps: false, ..warps };
        for (n, mels, window, limits) in [(400u64, 80u64, false, blocks), (3000, 128, true, warps), (160, 10, true, warps), (375, 40, true, warps), (400, 80, false, warps), (2048, 128, true, warps)] {
            let attrs = LogMelAttrs { window, ..LogMelAttrs::frames(n, mels) };
            let s = specialize(&attrs, &[5, n as usize], Target::Cuda, &limits).unwrap();
            for arch in ["sm_90", "sm_80"] {
                let (_, ptx, log) = compile_cuda(&s, arch).unwrap_or_else(|e| panic!("n_fft {n}: {e}"));
                // The warp form syncs warps only and finds the maximum by shuffles; the block form has barriers.
                let (barriers, shuffles) = (ptx.contains("bar.sync") || ptx.contains("barrier.sync"), ptx.contains("shfl.sync.bfly"));
                assert_eq!((barriers, shuffles), (!s.plan.warps, s.plan.warps), "n_fft {n} {arch}, warps {}", s.plan.warps);
                for entry in LogMelEntry::ALL {
                    assert!(ptx.contains(&format!(".entry {}(", entry.name())), "n_fft {n} {arch}: no {}", entry.name());
                }
                assert!(log.contains("Used"), "ptxas reported nothing: {log}");
                assert!(!log.contains("warning"), "n_fft {n} {arch}: {log}");
                // RLX's signature: its entry points only, sixteen parameters each.
                let (_, ptx, _) = compile_cuda_with(&s, Bindings::RlxArena { stage: 0 }, arch).unwrap_or_else(|e| panic!("n_fft {n} in RLX's arena: {e}"));
                for entry in LogMelEntry::ALL {
                    let name = rlx_entry(entry);
                    assert!(ptx.contains(&format!(".entry {name}(")) && !ptx.contains(&format!(".entry {}(", entry.name())), "n_fft {n} {arch}: {name}");
                    assert!(ptx.contains(&format!("{name}_param_15")) && !ptx.contains(&format!("{name}_param_16")), "n_fft {n} {arch}: {name} not in RLX's signature");
                }
            }
        }
    }
}
