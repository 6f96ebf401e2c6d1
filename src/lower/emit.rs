//! `--emit-kernels=DIR`: for every fused op of a graph, the kernels of its
//! recorded lowering and a `manifest.json`, in `DIR/<graph>/n<id>/`. Every
//! file the manifest names is written; the geometry comes from the same
//! lowering plan that priced the op.

use super::{LowerError, specialize};
use crate::analysis::plan::{DeviceLimits, plan, target_of};
use crate::fused::{LogMelAttrs, Lowering, WelchPeaksAttrs};
use crate::ir::{Graph, Node};
use crate::output::Batch;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;
use std::rc::Rc;

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
    // An op's files depend on its attributes and its input's shape alone:
    // ops alike get them made once (each op's own compile took 5 ms, 20 s
    // for 4,000 chains: an adversarial run), each still in its folder.
    let mut made: HashMap<(String, Option<Vec<u64>>), Rc<OpFiles>> = HashMap::new();
    for node in graph.nodes() {
        let op_error = |message: &str| EmitError::Op { label: node.label, message: message.to_string() };
        let input: Option<Vec<u64>> = node.operands.first().and_then(|id| graph.node(*id).ty.static_dims().map(|d| d.to_vec()));
        let fused = match (node.op.welch_peaks(), node.op.log_mel()) {
            (Some(attrs), _) => Fused::WelchPeaks(attrs.map_err(op_error)?),
            (_, Some(attrs)) => Fused::LogMel(attrs.map_err(op_error)?),
            _ => continue,
        };
        let op = match made.entry((fused.key(), input)) {
            Entry::Occupied(known) => Rc::clone(known.get()),
            Entry::Vacant(slot) => Rc::clone(slot.insert(Rc::new(op_files(graph, node, fused).map_err(|source| EmitError::Lower { label: node.label, source })?))),
        };
        let folder = dir.join(safe(&graph.name)).join(format!("n{}", node.label));
        for (name, bytes) in &op.files {
            files.add(folder.join(name), bytes.clone());
        }
        files.add(folder.join("manifest.json"), op.manifest.clone());
        folders.push(folder.to_string_lossy().into_owned());
    }
    Ok(folders)
}

/// One fused op's kernel files by name, and its manifest.
struct OpFiles {
    files: Vec<(String, Vec<u8>)>,
    manifest: Vec<u8>,
}

/// A fused op's attributes, read once: what its files are made from.
#[derive(Clone, Copy)]
enum Fused<'a> {
    WelchPeaks(&'a WelchPeaksAttrs),
    LogMel(&'a LogMelAttrs),
}

impl Fused<'_> {
    /// What ops with the same files (given their input's shape) share.
    fn key(self) -> String {
        let (name, attrs) = match self {
            Fused::WelchPeaks(attrs) => ("welch_peaks", serde_json::to_string(attrs)),
            Fused::LogMel(attrs) => ("log_mel", serde_json::to_string(attrs)),
        };
        format!("{name} {}", attrs.expect("attributes serialise"))
    }
}

fn op_files(graph: &Graph, node: &Node, fused: Fused) -> Result<OpFiles, LowerError> {
    let mut files = Vec::new();
    let mut put = |name: &str, bytes: &[u8]| files.push((name.to_string(), bytes.to_vec()));
    let manifest = match fused {
        Fused::WelchPeaks(attrs) => op_kernels(graph, node, attrs, &mut put)?,
        Fused::LogMel(attrs) => log_mel_kernels(graph, node, attrs, &mut put)?,
    };
    Ok(OpFiles { files, manifest: (serde_json::to_string_pretty(&manifest).expect("manifests serialise") + "\n").into_bytes() })
}

/// The GPU target whose kernels an op with `lowering` has, or, for the CPU
/// kernel (`cpu_kernel` names it) and a host call, the op's whole manifest.
fn gpu_target(lowering: Lowering, cpu_kernel: &str, attrs: &impl serde::Serialize, input: &Option<Vec<u64>>) -> Result<crate::analysis::Target, serde_json::Value> {
    match target_of(lowering) {
        Some(target) if lowering != Lowering::Cpu => Ok(target),
        _ => {
            let kernel = if lowering == Lowering::Cpu { cpu_kernel } else { "none: a host call of the fused op" };
            Err(serde_json::json!({"target": lowering, "kernel": kernel, "attrs": attrs, "input_shape": input}))
        }
    }
}

/// One op's kernel files, each handed to `put` by name; returns its manifest.
fn op_kernels(graph: &Graph, node: &Node, attrs: &WelchPeaksAttrs, put: &mut dyn FnMut(&str, &[u8])) -> Result<serde_json::Value, LowerError> {
    let input_ty = &graph.node(node.operands[0]).ty;
    let input: Option<Vec<u64>> = input_ty.static_dims().map(|d| d.to_vec());
    let lowering = attrs.lowering.unwrap_or(Lowering::Host);
    let target = match gpu_target(lowering, "rlx_opt::runtime::welch::cpu_kernel", attrs, &input) {
        Ok(target) => target,
        Err(manifest) => return Ok(manifest),
    };
    let planned = plan(attrs, input_ty, target, &DeviceLimits::assumed_as_asked(target))?;
    let spec = specialize(attrs, planned.kernel.ok_or(LowerError::DynamicInput)?);
    if lowering == Lowering::Cuda { cuda_files(&spec, attrs, put) } else { wgsl_files(&spec, attrs, lowering, put) }
}

#[cfg(feature = "cuda")]
fn cuda_files(spec: &super::Specialization, attrs: &WelchPeaksAttrs, put: &mut dyn FnMut(&str, &[u8])) -> Result<serde_json::Value, LowerError> {
    use super::cuda;
    let mut files = vec!["welch_peaks.cu".to_string()];
    if cuda::nvrtc_available() {
        // The source compiled: with the occupancy form, the bound kept.
        let (source, ptx, log) = cuda::compile(spec, "sm_90")?;
        put("welch_peaks.cu", source.as_bytes());
        put("welch_peaks.sm_90.ptx", ptx.as_bytes());
        put("nvrtc.log", log.as_bytes());
        files.extend(["welch_peaks.sm_90.ptx".to_string(), "nvrtc.log".to_string()]);
    } else {
        put("welch_peaks.cu", cuda::source(spec)?.as_bytes());
    }
    Ok(super::manifest("cuda", &entry_points(spec), &files, spec, attrs))
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
    Ok(super::manifest(name, &entry_points(spec), &files, spec, attrs))
}

#[cfg(not(feature = "wgpu"))]
fn wgsl_files(_: &super::Specialization, _: &WelchPeaksAttrs, _: Lowering, _: &mut dyn FnMut(&str, &[u8])) -> Result<serde_json::Value, LowerError> {
    Err(LowerError::NotBuilt("wgpu"))
}

/// The plan's entry points in launch order, for people (CUDA's `load,
/// stage × LOG2N (…), peaks_of`; WGSL's `columns, rows, peaks_of`); the
/// manifest's `launches` has each launch.
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
fn entry_points(spec: &super::Specialization) -> String {
    let mut names: Vec<String> = Vec::new();
    let launches = super::launches(&spec.kernel);
    for (i, launch) in launches.iter().enumerate() {
        let after_a_stage = i > 0 && launches[i - 1].stage.is_some();
        match launch.stage {
            // The stages are one entry point, named once.
            Some(_) if after_a_stage => {}
            Some(_) => names.push(format!("{} × LOG2N (the stage a kernel argument)", launch.entry)),
            None => names.push(launch.entry.name().to_string()),
        }
    }
    names.join(", ")
}

/// One log-mel op's kernel files (`log_mel.wgsl`, `.spv`, `.metal`, or
/// `log_mel.cu` and its PTX), each handed to `put`; returns its manifest:
/// the launches in order (`lower::log_mel::launches`), each entry point's
/// bindings, the FFT's radices, the placeholders' values.
fn log_mel_kernels(graph: &Graph, node: &Node, attrs: &LogMelAttrs, put: &mut dyn FnMut(&str, &[u8])) -> Result<serde_json::Value, LowerError> {
    use super::log_mel;
    let input_ty = &graph.node(node.operands[0]).ty;
    let input: Option<Vec<u64>> = input_ty.static_dims().map(|d| d.to_vec());
    let lowering = attrs.lowering.unwrap_or(Lowering::Host);
    let target = match gpu_target(lowering, "rlx_opt::runtime::log_mel::cpu_kernel", attrs, &input) {
        Ok(target) => target,
        Err(manifest) => return Ok(manifest),
    };
    let shape: Vec<usize> = input.ok_or(LowerError::DynamicInput)?.iter().map(|d| *d as usize).collect();
    let spec = log_mel::specialize(attrs, &shape, target, &DeviceLimits::assumed_as_asked(target))?;
    let (name, files) = match lowering {
        Lowering::Cuda => ("cuda", log_mel_cuda_files(&spec, put)?),
        Lowering::Spirv => ("spirv", log_mel_wgsl_files(&spec, put)?),
        _ => ("msl", log_mel_wgsl_files(&spec, put)?),
    };
    let launches: Vec<serde_json::Value> = log_mel::launches(&spec)
        .iter()
        .map(|l| {
            let (x, y) = l.grid();
            let bindings: Vec<serde_json::Value> = l
                .entry
                .buffers()
                .iter()
                .map(|b| serde_json::json!({"binding": b.binding(), "name": b.name(), "access": if matches!(b, log_mel::LogMelBuffer::Mels | log_mel::LogMelBuffer::Bands) { "read_write" } else { "read" }, "len": b.len(&spec)}))
                .collect();
            serde_json::json!({"entry_point": l.entry.name(), "workgroups": l.groups, "dims": [x, y, 1], "workgroup_size": [l.threads, 1, 1], "bindings": bindings})
        })
        .collect();
    Ok(serde_json::json!({
        "target": name,
        "entry_points": log_mel::LogMelEntry::ALL.map(|e| e.name()),
        "files": files,
        "launches": launches,
        "shared_memory_bytes": spec.plan.shared_bytes,
        "fft_radices": spec.plan.radices,
        "fft_len": spec.plan.fft_len,
        "fft_packed": spec.plan.packed,
        "specialization_constants": spec.constants.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        "attrs": attrs,
    }))
}

#[cfg(feature = "cuda")]
fn log_mel_cuda_files(spec: &super::log_mel::LogMelSpec, put: &mut dyn FnMut(&str, &[u8])) -> Result<Vec<String>, LowerError> {
    use super::log_mel;
    let mut files = vec!["log_mel.cu".to_string()];
    put("log_mel.cu", log_mel::cuda_source(spec)?.as_bytes());
    if super::cuda::nvrtc_available() {
        let (_, ptx, log) = log_mel::compile_cuda(spec, "sm_90")?;
        put("log_mel.sm_90.ptx", ptx.as_bytes());
        put("nvrtc.log", log.as_bytes());
        files.extend(["log_mel.sm_90.ptx".to_string(), "nvrtc.log".to_string()]);
    }
    Ok(files)
}

#[cfg(not(feature = "cuda"))]
fn log_mel_cuda_files(_: &super::log_mel::LogMelSpec, _: &mut dyn FnMut(&str, &[u8])) -> Result<Vec<String>, LowerError> {
    Err(LowerError::NotBuilt("cuda"))
}

#[cfg(feature = "wgpu")]
fn log_mel_wgsl_files(spec: &super::log_mel::LogMelSpec, put: &mut dyn FnMut(&str, &[u8])) -> Result<Vec<String>, LowerError> {
    let kernel = super::log_mel::compile_wgsl(spec)?;
    put("log_mel.wgsl", kernel.wgsl.as_bytes());
    put("log_mel.spv", bytemuck::cast_slice(&kernel.spirv()?));
    put("log_mel.metal", kernel.msl()?.as_bytes());
    Ok(["log_mel.wgsl", "log_mel.spv", "log_mel.metal"].map(String::from).to_vec())
}

#[cfg(not(feature = "wgpu"))]
fn log_mel_wgsl_files(_: &super::log_mel::LogMelSpec, _: &mut dyn FnMut(&str, &[u8])) -> Result<Vec<String>, LowerError> {
    Err(LowerError::NotBuilt("wgpu"))
}

fn safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}

#[cfg(all(test, feature = "wgpu", feature = "cuda"))]
mod tests {
    use super::*;
    use crate::ir::{DType, Op, OpKind, TensorType};

    /// A graph of one log-mel op (Whisper's geometry) lowered to `lowering`.
    fn log_mel_graph(lowering: Lowering) -> Graph {
        let mut g = Graph::new("whisper");
        let frames = g.add_node(Op::from_kind(OpKind::Input { name: "frames".into() }), &[], TensorType::new(&[37, 400], DType::F32));
        let filters = g.add_node(Op::from_kind(OpKind::Input { name: "filters".into() }), &[], TensorType::new(&[80, 201], DType::F32));
        let attrs = LogMelAttrs { lowering: Some(lowering), ..LogMelAttrs::frames(400, 80) };
        g.add_node(Op::from_log_mel(&attrs), &[frames, filters], TensorType::new(&[37, 80], DType::F32));
        g
    }

    /// `--emit-kernels` writes a log-mel op's WGSL, SPIR-V and Metal (or its
    /// CUDA) and a manifest with both launches; a host call gets a manifest only.
    #[test]
    fn log_mel_ops_get_their_kernels_and_manifest() {
        for (lowering, file, target) in [(Lowering::Spirv, "log_mel.metal", "spirv"), (Lowering::Cuda, "log_mel.cu", "cuda"), (Lowering::Host, "manifest.json", "host")] {
            let dir = tempfile::tempdir().unwrap();
            let mut files = Batch::default();
            let folders = emit_kernels(&log_mel_graph(lowering), dir.path(), &mut files).unwrap();
            let folder = dir.path().join("whisper").join("n2");
            assert_eq!(folders, [folder.to_string_lossy()]);
            files.finish().unwrap();
            assert!(folder.join(file).is_file(), "{lowering:?}: no {file}");
            let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(folder.join("manifest.json")).unwrap()).unwrap();
            assert_eq!(manifest["target"], target);
            if lowering != Lowering::Host {
                // n_fft 400 packed into a complex FFT of 200 = 4·2·5·5.
                assert_eq!(manifest["fft_radices"], serde_json::json!([4, 2, 5, 5]));
                assert_eq!((manifest["fft_len"].as_u64(), manifest["fft_packed"].as_bool()), (Some(200), Some(true)));
                let entries: Vec<&str> = manifest["launches"].as_array().unwrap().iter().map(|l| l["entry_point"].as_str().unwrap()).collect();
                assert_eq!(entries, ["mel_bands", "log_mel"]);
                // WGSL: a workgroup per frame; CUDA: a warp per frame, 8 a block.
                assert_eq!(manifest["launches"][1]["workgroups"], if lowering == Lowering::Cuda { 5 } else { 37 });
            }
        }
    }
}
