//! The WGSL kernel through naga: parsed, validated, and written as SPIR-V
//! (run by wgpu on Vulkan) and Metal Shading Language (validated only: Metal
//! cannot be compiled or run on Linux).

use super::Specialization;
use naga::back::{msl, spv};
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};

pub const TEMPLATE: &str = include_str!("../../kernels/welch_peaks.wgsl");
pub const MULTIPASS_TEMPLATE: &str = include_str!("../../kernels/welch_peaks_multipass.wgsl");
/// Constants and helpers both templates paste in for `{{COMMON}}`.
pub const COMMON: &str = include_str!("../../kernels/welch_peaks_common.wgsl");
pub const ENTRY: &str = "welch_peaks";
/// The multi-pass plan's entry points, in dispatch order (`stage` LOG2N times).
pub const MULTIPASS_ENTRIES: [&str; 3] = ["load", "stage", "peaks_of"];

/// The specialised kernel: its WGSL and the validated naga module.
pub struct Kernel {
    pub wgsl: String,
    pub module: naga::Module,
    pub info: ModuleInfo,
}

/// The one-pass kernel, or for the multi-pass plan its module with `STAGE = 0`.
pub fn compile(spec: &Specialization) -> Result<Kernel, String> {
    compile_stage(spec, 0)
}

/// The kernel module whose `stage` entry point runs radix-2 stage `stage`.
pub fn compile_stage(spec: &Specialization, stage: u32) -> Result<Kernel, String> {
    let template = match spec.plan {
        super::Plan::OnePass => TEMPLATE,
        super::Plan::MultiPass => MULTIPASS_TEMPLATE,
    };
    let wgsl = super::fill_with(&template.replace("{{COMMON}}", COMMON), spec, &[("STAGE", stage.to_string())])?;
    let module = naga::front::wgsl::parse_str(&wgsl).map_err(|e| format!("WGSL kernel does not parse: {}", e.emit_to_string(&wgsl)))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::default())
        .validate(&module)
        .map_err(|e| format!("WGSL kernel does not validate: {}", e.emit_to_string(&wgsl)))?;
    Ok(Kernel { wgsl, module, info })
}

impl Kernel {
    pub fn spirv(&self) -> Result<Vec<u32>, String> {
        let options = spv::Options {
            // Every shared variable is written before it is read; naga's zeroing
            // polyfill doubled run time on lavapipe.
            zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
            ..spv::Options::default()
        };
        spv::write_vec(&self.module, &self.info, &options, None).map_err(|e| format!("SPIR-V writer: {e}"))
    }

    /// Metal for every entry point of the module.
    pub fn msl(&self) -> Result<String, String> {
        let mut resources = msl::BindingMap::default();
        for (binding, mutable) in [(0, false), (1, false), (2, true), (3, true)] {
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
        msl::write_string(&self.module, &self.info, &options, &pipeline).map(|(text, _)| text).map_err(|e| format!("MSL writer: {e}"))
    }
}
