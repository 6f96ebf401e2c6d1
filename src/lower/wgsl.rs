//! The WGSL kernel: specialised for its operands' bindings (its own, or
//! RLX's arena), and with the `wgpu` feature through naga: parsed,
//! validated, and written as SPIR-V (run by wgpu on Vulkan) and Metal
//! Shading Language (validated only: Metal cannot be compiled or run on Linux).

use super::{Bindings, FftPasses, KernelBuffer, KernelEntry, LowerError, Specialization};
#[cfg(feature = "wgpu")]
use naga::back::{msl, spv};
#[cfg(feature = "wgpu")]
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};

pub const TEMPLATE: &str = include_str!("../../kernels/welch_peaks.wgsl");
/// The multi-pass plans: the four-step FFT through device memory.
pub const FOUR_STEP_TEMPLATE: &str = include_str!("../../kernels/welch_peaks_four_step.wgsl");
/// Constants and helpers both templates paste in for `{{COMMON}}`.
pub const COMMON: &str = include_str!("../../kernels/welch_peaks_common.wgsl");
/// The top-k's workgroup-wide maximum, pasted into `COMMON` for `{{TOPK}}`:
/// with subgroup operations, or with workgroup memory alone.
pub const TOPK_SUBGROUP: &str = include_str!("../../kernels/welch_peaks_topk_subgroup.wgsl");
pub const TOPK_WORKGROUP: &str = include_str!("../../kernels/welch_peaks_topk_workgroup.wgsl");
/// The operands as bindings of their own, and the multi-pass spectrum buffer.
pub const IO_BUFFERS: &str = include_str!("../../kernels/welch_peaks_io_buffers.wgsl");
pub const IO_SPECTRA_BUFFER: &str = include_str!("../../kernels/welch_peaks_io_spectra_buffer.wgsl");
/// The operands in RLX's arena.
pub const IO_RLX: &str = include_str!("../../kernels/welch_peaks_io_rlx.wgsl");
/// The one-pass batch plan's entry point (every entry: [`KernelEntry`]).
pub const ENTRY: &str = KernelEntry::WelchPeaks.name();
/// The split plans' partial power spectra.
pub const PARTIALS_BINDING: u32 = KernelBuffer::Partials.binding();

/// The specialised kernel's WGSL for operands bound as `bindings`: every
/// entry point of its plan (one module).
pub fn source(spec: &Specialization, bindings: Bindings) -> Result<String, LowerError> {
    if spec.kernel.packed {
        return Err(LowerError::NoWgslPackedSegment);
    }
    let table = spec.kernel.twiddle_table;
    // The FFT front end both fused ops share: once, or for the four-step
    // FFT twice (its columns' and its rows' lengths).
    let (template, ffts) = match spec.kernel.fft.four_step() {
        None if spec.kernel.fft == FftPasses::OnePass => (TEMPLATE, vec![("{{FFT}}", super::fft::wgsl(spec.n_fft, table)?)]),
        None => return Err(LowerError::NoWgslForm(spec.kernel.fft)),
        Some(f) => (FOUR_STEP_TEMPLATE, vec![("{{FFT_COLUMNS}}", super::fft::wgsl_prefixed(f.n1, table, "col")?), ("{{FFT_ROWS}}", super::fft::wgsl_prefixed(f.n2, table, "row")?)]),
    };
    let io = match bindings {
        Bindings::Buffers if ffts.len() == 1 => IO_BUFFERS.to_string(),
        Bindings::Buffers => format!("{IO_BUFFERS}\n{IO_SPECTRA_BUFFER}"),
        Bindings::RlxArena { .. } => IO_RLX.to_string(),
    };
    let topk = if spec.subgroups { TOPK_SUBGROUP } else { TOPK_WORKGROUP };
    let mut text = template.replace("{{COMMON}}", &COMMON.replace("{{TOPK}}", topk).replace("{{SAMPLES}}", super::WGSL_SAMPLES)).replace("{{IO}}", &io);
    for (placeholder, fft) in ffts {
        text = text.replace(placeholder, &fft);
    }
    super::fill(&text, spec)
}

/// The specialised kernel: its WGSL and the validated naga module.
#[cfg(feature = "wgpu")]
pub struct Kernel {
    pub wgsl: String,
    pub module: naga::Module,
    pub info: ModuleInfo,
}

/// The specialised kernel module with bindings of its own: the one-pass
/// kernel, or every entry point of the multi-pass plan (the stage index is
/// read at run time).
#[cfg(feature = "wgpu")]
pub fn compile(spec: &Specialization) -> Result<Kernel, LowerError> {
    compile_with(spec, Bindings::Buffers)
}

/// The specialised kernel module for operands bound as `bindings`.
#[cfg(feature = "wgpu")]
pub fn compile_with(spec: &Specialization, bindings: Bindings) -> Result<Kernel, LowerError> {
    let text = source(spec, bindings)?;
    if spec.subgroups { validate_with_subgroups(text) } else { validate(text) }
}

/// WGSL text (a specialised kernel of either fused op) parsed and validated by naga.
#[cfg(feature = "wgpu")]
pub fn validate(wgsl: String) -> Result<Kernel, LowerError> {
    validate_with(wgsl, Validator::new(ValidationFlags::all(), Capabilities::default()))
}

/// [`validate`], the module allowed the subgroup operations of wgpu's
/// `SUBGROUP` feature in compute shaders.
#[cfg(feature = "wgpu")]
pub fn validate_with_subgroups(wgsl: String) -> Result<Kernel, LowerError> {
    let mut validator = Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP);
    validator.subgroup_stages(naga::valid::ShaderStages::COMPUTE).subgroup_operations(naga::valid::SubgroupOperationSet::all());
    validate_with(wgsl, validator)
}

#[cfg(feature = "wgpu")]
fn validate_with(wgsl: String, mut validator: Validator) -> Result<Kernel, LowerError> {
    let module = naga::front::wgsl::parse_str(&wgsl).map_err(|e| LowerError::Wgsl { stage: "parse", message: e.emit_to_string(&wgsl) })?;
    let info = validator
        .validate(&module)
        .map_err(|e| LowerError::Wgsl { stage: "validate", message: e.emit_to_string(&wgsl) })?;
    Ok(Kernel { wgsl, module, info })
}

#[cfg(feature = "wgpu")]
impl Kernel {
    pub fn spirv(&self) -> Result<Vec<u32>, LowerError> {
        let options = spv::Options {
            // Every shared variable is written before it is read; naga's zeroing
            // polyfill doubled run time on lavapipe.
            zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
            ..spv::Options::default()
        };
        spv::write_vec(&self.module, &self.info, &options, None).map_err(|e| LowerError::Writer { writer: "SPIR-V", message: e.to_string() })
    }

    /// Metal for every entry point of the module.
    pub fn msl(&self) -> Result<String, LowerError> {
        let mut resources = msl::BindingMap::default();
        let buffers = KernelBuffer::ALL.map(|b| (b.binding(), b.written()));
        for (binding, mutable) in buffers {
            let target = msl::BindTarget { buffer: Some(binding as u8), mutable, ..Default::default() };
            resources.insert(naga::ResourceBinding { group: 0, binding }, target);
        }
        let entry = msl::EntryPointResources { resources, immediates_buffer: None, sizes_buffer: Some(4) };
        let entries = self.module.entry_points.iter().map(|e| (e.name.clone(), entry.clone())).collect();
        let options = msl::Options {
            lang_version: (2, 4),
            per_entry_point_map: entries,
            fake_missing_bindings: false,
            zero_initialize_workgroup_memory: false,
            ..msl::Options::default()
        };
        let pipeline = msl::PipelineOptions { entry_point: None, ..Default::default() };
        msl::write_string(&self.module, &self.info, &options, &pipeline).map(|(text, _)| text).map_err(|e| LowerError::Writer { writer: "MSL", message: e.to_string() })
    }
}
