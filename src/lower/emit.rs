//! `--emit-kernels=DIR`: for every fused op of a graph, the kernels of its
//! recorded lowering and a `manifest.json`, in `DIR/<graph>/n<id>/`. Every
//! file the manifest names is written; the geometry comes from the same
//! lowering plan that priced the op.

use super::{FftPlan, LowerError, specialize};
use crate::analysis::plan::{DeviceLimits, plan, target_of};
use crate::fused::{Lowering, WelchPeaksAttrs};
use crate::ir::{Graph, Node};
use crate::output::write_file;
use std::path::Path;

/// Why kernels could not be written.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("fused op %{label}: {source}")]
    Lower { label: u32, source: LowerError },
    #[error("fused op %{label}: {message}")]
    Op { label: u32, message: String },
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
    #[error("cannot create '{path}': {source}")]
    Folder { path: String, source: std::io::Error },
}

/// Write the kernels; returns the folders written.
pub fn emit_kernels(graph: &Graph, dir: &Path) -> Result<Vec<String>, EmitError> {
    let mut written = Vec::new();
    for node in graph.nodes() {
        let Some(attrs) = node.op.welch_peaks() else { continue };
        let op_error = |message: String| EmitError::Op { label: node.label, message };
        let attrs = attrs.map_err(|e| op_error(e.to_string()))?;
        let folder = dir.join(safe(&graph.name)).join(format!("n{}", node.label));
        std::fs::create_dir_all(&folder).map_err(|source| EmitError::Folder { path: folder.display().to_string(), source })?;
        let manifest = op_kernels(graph, node, attrs, &folder).map_err(|source| EmitError::Lower { label: node.label, source })?;
        write_file(&folder.join("manifest.json").to_string_lossy(), (serde_json::to_string_pretty(&manifest).expect("manifests serialise") + "\n").as_bytes())?;
        written.push(folder.to_string_lossy().into_owned());
    }
    Ok(written)
}

/// Write one op's kernel files into `folder`; returns its manifest.
fn op_kernels(graph: &Graph, node: &Node, attrs: &WelchPeaksAttrs, folder: &Path) -> Result<serde_json::Value, LowerError> {
    let input_ty = &graph.node(node.operands[0]).ty;
    let input: Option<Vec<u64>> = input_ty.static_dims().map(|d| d.to_vec());
    let lowering = attrs.lowering.unwrap_or(Lowering::Host);
    let write = |name: &str, bytes: &[u8]| -> Result<(), LowerError> {
        write_file(&folder.join(name).to_string_lossy(), bytes).map_err(|e| LowerError::Writer { writer: "kernel file", message: e.to_string() })
    };
    let target = match target_of(lowering) {
        Some(target) if lowering != Lowering::Cpu => target,
        _ => {
            let kernel = if lowering == Lowering::Cpu { "rlx_opt::runtime::welch::cpu_kernel" } else { "none: a host call of the fused op" };
            return Ok(serde_json::json!({"target": lowering, "kernel": kernel, "attrs": attrs, "input_shape": input}));
        }
    };
    let planned = plan(attrs, input_ty, target, &DeviceLimits::assumed(target))?;
    let spec = specialize(attrs, planned.kernel.ok_or(LowerError::DynamicInput)?);
    let multipass = spec.kernel.fft == FftPlan::MultiPass;
    if lowering == Lowering::Cuda { cuda_files(&spec, attrs, multipass, write) } else { wgsl_files(&spec, attrs, lowering, multipass, write) }
}

#[cfg(feature = "cuda")]
fn cuda_files(spec: &super::Specialization, attrs: &WelchPeaksAttrs, multipass: bool, write: impl Fn(&str, &[u8]) -> Result<(), LowerError>) -> Result<serde_json::Value, LowerError> {
    use super::cuda;
    let mut files = vec!["welch_peaks.cu".to_string()];
    write("welch_peaks.cu", cuda::source(spec)?.as_bytes())?;
    if cuda::nvrtc_available() {
        let (_, ptx, log) = cuda::compile(spec, "sm_90")?;
        write("welch_peaks.sm_90.ptx", ptx.as_bytes())?;
        write("nvrtc.log", log.as_bytes())?;
        files.extend(["welch_peaks.sm_90.ptx".to_string(), "nvrtc.log".to_string()]);
    }
    let entry = if multipass { "load, stage × LOG2N (the stage a kernel argument), peaks_of" } else { cuda::ENTRY };
    Ok(super::manifest("cuda", entry, &files, spec, attrs))
}

#[cfg(not(feature = "cuda"))]
fn cuda_files(_: &super::Specialization, _: &WelchPeaksAttrs, _: bool, _: impl Fn(&str, &[u8]) -> Result<(), LowerError>) -> Result<serde_json::Value, LowerError> {
    Err(LowerError::NotBuilt("cuda"))
}

#[cfg(feature = "wgpu")]
fn wgsl_files(
    spec: &super::Specialization,
    attrs: &WelchPeaksAttrs,
    lowering: Lowering,
    multipass: bool,
    write: impl Fn(&str, &[u8]) -> Result<(), LowerError>,
) -> Result<serde_json::Value, LowerError> {
    use super::wgsl;
    let kernel = wgsl::compile(spec)?;
    write("welch_peaks.wgsl", kernel.wgsl.as_bytes())?;
    write("welch_peaks.spv", bytemuck::cast_slice(&kernel.spirv()?))?;
    write("welch_peaks.metal", kernel.msl()?.as_bytes())?;
    let files = ["welch_peaks.wgsl", "welch_peaks.spv", "welch_peaks.metal"].map(String::from);
    let name = if lowering == Lowering::Spirv { "spirv" } else { "msl" };
    let entry = if multipass { "load, stage × LOG2N (the stage index at binding 4), peaks_of" } else { wgsl::ENTRY };
    Ok(super::manifest(name, entry, &files, spec, attrs))
}

#[cfg(not(feature = "wgpu"))]
fn wgsl_files(_: &super::Specialization, _: &WelchPeaksAttrs, _: Lowering, _: bool, _: impl Fn(&str, &[u8]) -> Result<(), LowerError>) -> Result<serde_json::Value, LowerError> {
    Err(LowerError::NotBuilt("wgpu"))
}

fn safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}
