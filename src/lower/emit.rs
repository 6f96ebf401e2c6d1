//! `--emit-kernels=DIR`: for every fused op of a graph, the kernels of its
//! recorded lowering and a `manifest.json`, in `DIR/<graph>/n<id>/`.

use super::{cuda, manifest, specialize, wgsl};
use crate::driver::write_file;
use crate::fused::{Lowering, WelchPeaksAttrs};
use crate::ir::Graph;
use std::path::Path;

/// Write the kernels; returns the folders written.
pub fn emit_kernels(graph: &Graph, dir: &Path) -> Result<Vec<String>, String> {
    let mut written = Vec::new();
    for node in graph.nodes() {
        let Some(attrs) = WelchPeaksAttrs::from_kind(node.op.kind()) else { continue };
        let attrs = attrs?;
        let folder = dir.join(safe(&graph.name)).join(format!("n{}", node.label));
        std::fs::create_dir_all(&folder).map_err(|e| format!("cannot create '{}': {e}", folder.display()))?;
        let input: Vec<usize> = graph.node(node.operands[0]).ty.static_dims().map(|d| d.iter().map(|x| *x as usize).collect()).ok_or("fused op with dynamic input dims")?;
        let write = |name: &str, bytes: &[u8]| write_file(&folder.join(name).to_string_lossy(), bytes);
        let lowering = attrs.lowering.unwrap_or(Lowering::Host);
        let manifest = match lowering {
            Lowering::Cpu | Lowering::Host => {
                let kernel = if lowering == Lowering::Cpu { "rlx_opt::runtime::welch::cpu_kernel" } else { "none: a host call of the fused op" };
                serde_json::json!({"target": lowering, "kernel": kernel, "attrs": attrs, "input_shape": input})
            }
            Lowering::Cuda => {
                let spec = specialize(&attrs, &input)?;
                let mut files = vec!["welch_peaks.cu".to_string()];
                let source = cuda::source(&spec)?;
                write("welch_peaks.cu", source.as_bytes())?;
                if cuda::nvrtc_available() {
                    let (_, ptx, log) = cuda::compile(&spec, "sm_90")?;
                    write("welch_peaks.sm_90.ptx", ptx.as_bytes())?;
                    write("nvrtc.log", log.as_bytes())?;
                    files.extend(["welch_peaks.sm_90.ptx".to_string(), "nvrtc.log".to_string()]);
                }
                let entry = match spec.plan {
                    super::Plan::OnePass => cuda::ENTRY.to_string(),
                    super::Plan::MultiPass => "load, stage × LOG2N, peaks_of".to_string(),
                };
                manifest("cuda", &entry, &files, &spec, &attrs)
            }
            Lowering::Spirv | Lowering::Msl => {
                let spec = specialize(&attrs, &input)?;
                let kernel = wgsl::compile(&spec)?;
                write("welch_peaks.wgsl", kernel.wgsl.as_bytes())?;
                let words = kernel.spirv()?;
                write("welch_peaks.spv", bytemuck::cast_slice(&words))?;
                write("welch_peaks.metal", kernel.msl()?.as_bytes())?;
                let files = ["welch_peaks.wgsl", "welch_peaks.spv", "welch_peaks.metal"].map(String::from);
                let target = if lowering == Lowering::Spirv { "spirv" } else { "msl" };
                let entry = match spec.plan {
                    super::Plan::OnePass => wgsl::ENTRY.to_string(),
                    super::Plan::MultiPass => "load, stage × LOG2N (one module per STAGE), peaks_of".to_string(),
                };
                manifest(target, &entry, &files, &spec, &attrs)
            }
        };
        write("manifest.json", (serde_json::to_string_pretty(&manifest).expect("manifests serialise") + "\n").as_bytes())?;
        written.push(folder.to_string_lossy().into_owned());
    }
    Ok(written)
}

fn safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}
