//! `--emit-kernels=DIR`: for every fused op of a graph, the kernels of its
//! recorded lowering and a `manifest.json`, in `DIR/<graph>/n<id>/`. Every
//! file the manifest names is written; the geometry comes from the same
//! lowering plan that priced the op.

use super::{LowerError, specialize};
use crate::analysis::plan::{DeviceLimits, plan, target_of};
use crate::fused::{Lowering, WelchPeaksAttrs};
use crate::ir::{Graph, Node};
use crate::output::Batch;
use std::path::Path;

/// Why kernels could not be written.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("fused op %{label}: {source}")]
    Lower { label: u32, source: LowerError },
    #[error("fused op %{label}: {message}")]
    Op { label: u32, message: String },
}

/// Add the kernels of every fused op of `graph` to `files` (written when the
/// caller finishes the batch, with everything else or not at all); returns
/// the folders they go to.
pub fn emit_kernels(graph: &Graph, dir: &Path, files: &mut Batch) -> Result<Vec<String>, EmitError> {
    let mut folders = Vec::new();
    for node in graph.nodes() {
        let Some(attrs) = node.op.welch_peaks() else { continue };
        let op_error = |message: String| EmitError::Op { label: node.label, message };
        let attrs = attrs.map_err(|e| op_error(e.to_string()))?;
        let folder = dir.join(safe(&graph.name)).join(format!("n{}", node.label));
        let mut op_files = Vec::new();
        let manifest = op_kernels(graph, node, attrs, &mut |name, bytes| op_files.push((folder.join(name), bytes.to_vec())))
            .map_err(|source| EmitError::Lower { label: node.label, source })?;
        op_files.push((folder.join("manifest.json"), (serde_json::to_string_pretty(&manifest).expect("manifests serialise") + "\n").into_bytes()));
        op_files.into_iter().for_each(|(path, bytes)| files.add(path, bytes));
        folders.push(folder.to_string_lossy().into_owned());
    }
    Ok(folders)
}

/// One op's kernel files, each handed to `put` by name; returns its manifest.
fn op_kernels(graph: &Graph, node: &Node, attrs: &WelchPeaksAttrs, put: &mut dyn FnMut(&str, &[u8])) -> Result<serde_json::Value, LowerError> {
    let input_ty = &graph.node(node.operands[0]).ty;
    let input: Option<Vec<u64>> = input_ty.static_dims().map(|d| d.to_vec());
    let lowering = attrs.lowering.unwrap_or(Lowering::Host);
    let target = match target_of(lowering) {
        Some(target) if lowering != Lowering::Cpu => target,
        _ => {
            let kernel = if lowering == Lowering::Cpu { "rlx_opt::runtime::welch::cpu_kernel" } else { "none: a host call of the fused op" };
            return Ok(serde_json::json!({"target": lowering, "kernel": kernel, "attrs": attrs, "input_shape": input}));
        }
    };
    let planned = plan(attrs, input_ty, target, &DeviceLimits::assumed(target))?;
    let spec = specialize(attrs, planned.kernel.ok_or(LowerError::DynamicInput)?);
    if lowering == Lowering::Cuda { cuda_files(&spec, attrs, put) } else { wgsl_files(&spec, attrs, lowering, put) }
}

#[cfg(feature = "cuda")]
fn cuda_files(spec: &super::Specialization, attrs: &WelchPeaksAttrs, put: &mut dyn FnMut(&str, &[u8])) -> Result<serde_json::Value, LowerError> {
    use super::cuda;
    let mut files = vec!["welch_peaks.cu".to_string()];
    put("welch_peaks.cu", cuda::source(spec)?.as_bytes());
    if cuda::nvrtc_available() {
        let (_, ptx, log) = cuda::compile(spec, "sm_90")?;
        put("welch_peaks.sm_90.ptx", ptx.as_bytes());
        put("nvrtc.log", log.as_bytes());
        files.extend(["welch_peaks.sm_90.ptx".to_string(), "nvrtc.log".to_string()]);
    }
    Ok(super::manifest("cuda", &entry_points(spec, "the stage a kernel argument"), &files, spec, attrs))
}

#[cfg(not(feature = "cuda"))]
fn cuda_files(_: &super::Specialization, _: &WelchPeaksAttrs, _: &mut dyn FnMut(&str, &[u8])) -> Result<serde_json::Value, LowerError> {
    Err(LowerError::NotBuilt("cuda"))
}

#[cfg(feature = "wgpu")]
fn wgsl_files(
    spec: &super::Specialization,
    attrs: &WelchPeaksAttrs,
    lowering: Lowering,
    put: &mut dyn FnMut(&str, &[u8]),
) -> Result<serde_json::Value, LowerError> {
    use super::wgsl;
    let kernel = wgsl::compile(spec)?;
    put("welch_peaks.wgsl", kernel.wgsl.as_bytes());
    put("welch_peaks.spv", bytemuck::cast_slice(&kernel.spirv()?));
    put("welch_peaks.metal", kernel.msl()?.as_bytes());
    let files = ["welch_peaks.wgsl", "welch_peaks.spv", "welch_peaks.metal"].map(String::from);
    let name = if lowering == Lowering::Spirv { "spirv" } else { "msl" };
    Ok(super::manifest(name, &entry_points(spec, "the stage index at binding 4"), &files, spec, attrs))
}

#[cfg(not(feature = "wgpu"))]
fn wgsl_files(_: &super::Specialization, _: &WelchPeaksAttrs, _: Lowering, _: &mut dyn FnMut(&str, &[u8])) -> Result<serde_json::Value, LowerError> {
    Err(LowerError::NotBuilt("wgpu"))
}

/// The plan's entry points in launch order, for people (`load, stage ×
/// LOG2N (…), peaks_of`); the manifest's `launches` has each launch.
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
fn entry_points(spec: &super::Specialization, stage_note: &str) -> String {
    let mut names: Vec<String> = Vec::new();
    let launches = super::launches(&spec.kernel);
    for (i, launch) in launches.iter().enumerate() {
        let after_a_stage = i > 0 && launches[i - 1].stage.is_some();
        match launch.stage {
            // The stages are one entry point, named once.
            Some(_) if after_a_stage => {}
            Some(_) => names.push(format!("{} × LOG2N ({stage_note})", launch.entry)),
            None => names.push(launch.entry.name().to_string()),
        }
    }
    names.join(", ")
}

fn safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}
