//! The fused log-mel op registered with RLX: its op extension (shape
//! inference, verification) and its CPU kernel, which RLX also calls,
//! through the host, from GPU sessions (the op's `lowering: host`); and the
//! CPU kernels of the two ops a wgpu session runs it as
//! ([`crate::log_mel_ops`]), for a device that stages them through the host.

use crate::caller_share::share_rows_with_caller;
use crate::registration::{once_per_name, static_dims};
use crate::recording::record_kernel;
use rlx_cpu::op_registry::{CpuTensorMut, CpuTensorRef, register_cpu_kernel};
use rlx_ir::op_registry::{OpExtension, register_op};
use rlx_ir::{DType, Shape};
use rlx_opt::fused::{LOG_MEL, LogMelAttrs};
use rlx_opt::runtime::TensorRef;
use rlx_opt::runtime::log_mel::{cpu_kernel_rows, geometry, mel_bands};
use std::sync::Arc;

/// The op extension and CPU kernel of `rlx_opt.log_mel`. Idempotent.
pub fn install_log_mel() {
    once_per_name(&format!("op:{LOG_MEL}"), || {
        register_op(Arc::new(LogMelExtension));
        register_cpu_kernel(Arc::new(LogMelCpu { name: LOG_MEL.to_string(), window_operand: 2 }));
    });
}

/// The CPU kernel of a log-mel op fitted to RLX's GPU kernels
/// ([`crate::log_mel_ops`]: operands the frames, the filters, the bands, the
/// window): the fused op's, the bands unread. Idempotent.
pub fn install_specialized_cpu(name: &str) {
    once_per_name(&format!("cpu:{name}"), || register_cpu_kernel(Arc::new(LogMelCpu { name: name.to_string(), window_operand: 3 })));
}

/// The CPU kernel of the op that finds each filter's band (the GPU kernels'
/// `mel_bands` entry's twin): `[n_mels, 2]` (first, end) as f32. Idempotent.
pub fn install_bands_cpu(name: &str) {
    once_per_name(&format!("cpu:{name}"), || register_cpu_kernel(Arc::new(MelBandsCpu { name: name.to_string() })));
}

/// The result shape of the op with `attrs` (JSON bytes) on frames of `input`.
fn result_shape(attrs: &[u8], input: &Shape) -> Result<Shape, String> {
    let attrs = LogMelAttrs::from_bytes(attrs).map_err(|e| e.to_string())?;
    let ty = rlx_opt::analysis::plan::f32_type(&static_dims(input)?);
    let lead = attrs.lead_of(&ty).map_err(|e| e.to_string())?;
    let dims: Vec<usize> = lead.iter().map(|d| d.as_static().unwrap_or(0) as usize).chain([attrs.n_mels as usize]).collect();
    Ok(Shape::new(&dims, DType::F32))
}

struct LogMelExtension;

impl OpExtension for LogMelExtension {
    fn name(&self) -> &str {
        LOG_MEL
    }

    /// The frames and the filters; a window is a third operand when the
    /// attributes say so (graphs carry the count in the op).
    fn num_inputs(&self) -> usize {
        2
    }

    /// A shape that cannot be inferred is reported by [`Self::verify`];
    /// this hook has no error path, so it answers the operand's shape.
    fn infer_shape(&self, inputs: &[&Shape], attrs: &[u8]) -> Shape {
        match inputs.first() {
            Some(input) => result_shape(attrs, input).unwrap_or_else(|_| (*input).clone()),
            None => Shape::new(&[0], DType::F32),
        }
    }

    fn verify(&self, node: &rlx_ir::Node, inputs: &[&Shape]) -> Vec<String> {
        let rlx_ir::Op::Custom { attrs, .. } = &node.op else { return vec![format!("{LOG_MEL} is not a custom op")] };
        let Some(input) = inputs.first() else { return vec![format!("{LOG_MEL} takes the frames as operand 0")] };
        let mut errors = Vec::new();
        match result_shape(attrs, input) {
            Ok(shape) if shape.dims() != node.shape.dims() => errors.push(format!("{LOG_MEL}: result shape {:?}, the op computes {:?}", node.shape, shape)),
            Ok(_) => {}
            Err(e) => errors.push(format!("{LOG_MEL}: {e}")),
        }
        if let Ok(parsed) = LogMelAttrs::from_bytes(attrs) {
            let want = parsed.num_inputs() as usize;
            if inputs.len() != want {
                errors.push(format!("{LOG_MEL}: {} operands, the attributes need {want}", inputs.len()));
            }
        }
        errors
    }
}

/// The native CPU kernel (`runtime::log_mel::cpu_kernel_rows`) straight on
/// RLX's tensors, no copy in or out, the calling thread taking a share;
/// under `name`, the window (when the op has one) its operand `window_operand`.
struct LogMelCpu {
    name: String,
    window_operand: usize,
}

impl rlx_cpu::op_registry::CpuKernel for LogMelCpu {
    fn name(&self) -> &str {
        &self.name
    }

    fn execute(&self, inputs: &[CpuTensorRef<'_>], output: CpuTensorMut<'_>, attrs: &[u8]) -> Result<(), String> {
        let started = std::time::Instant::now();
        let attrs = LogMelAttrs::from_bytes(attrs).map_err(|e| e.to_string())?;
        let [frames, filters] = [0, 1].map(|i| inputs.get(i));
        let (Some(frames), Some(filters)) = (frames, filters) else { return Err(format!("{} needs its frames and filters", self.name)) };
        let shapes = [static_dims(frames.shape())?, static_dims(filters.shape())?];
        let input = TensorRef { shape: &shapes[0], data: frames.expect_f32("the frames")? };
        let filters = TensorRef { shape: &shapes[1], data: filters.expect_f32("the filters")? };
        let window_shape;
        let window = match inputs.get(self.window_operand) {
            Some(w) => {
                window_shape = static_dims(w.shape())?;
                Some(TensorRef { shape: &window_shape, data: w.expect_f32("the window")? })
            }
            None => None,
        };
        let g = geometry(&attrs, input, filters, window).map_err(|e| e.to_string())?;
        let out = output.expect_f32_mut("the result")?;
        let want = g.rows * attrs.n_mels as usize;
        if out.len() != want {
            return Err(format!("the result holds {} values, the op writes {want}", out.len()));
        }
        // Whole groups of 8 rows for the caller: the kernel's SIMD batch.
        share_rows_with_caller(out, attrs.n_mels as usize, 8, |first, out, parallel| cpu_kernel_rows(&attrs, &g, input, filters, window, first, out, parallel));
        record_kernel(&self.name, started);
        Ok(())
    }
}

struct MelBandsCpu {
    name: String,
}

impl rlx_cpu::op_registry::CpuKernel for MelBandsCpu {
    fn name(&self) -> &str {
        &self.name
    }

    fn execute(&self, inputs: &[CpuTensorRef<'_>], output: CpuTensorMut<'_>, attrs: &[u8]) -> Result<(), String> {
        let started = std::time::Instant::now();
        let attrs = LogMelAttrs::from_bytes(attrs).map_err(|e| e.to_string())?;
        let filters = inputs.first().ok_or_else(|| format!("{} needs the filters", self.name))?;
        let shape = static_dims(filters.shape())?;
        let (mels, bins) = (attrs.n_mels as usize, attrs.bins() as usize);
        if shape.iter().product::<usize>() != mels * bins {
            return Err(format!("{}: filters {shape:?}, the op's are [{mels}, {bins}]", self.name));
        }
        let filters = TensorRef { shape: &shape, data: filters.expect_f32("the filters")? };
        let out = output.expect_f32_mut("the bands")?;
        if out.len() != 2 * mels {
            return Err(format!("{}: the result holds {} values, the bands are {}", self.name, out.len(), 2 * mels));
        }
        for (pair, band) in out.chunks_exact_mut(2).zip(mel_bands(filters, bins)) {
            pair.copy_from_slice(&[band.start as f32, band.end as f32]);
        }
        record_kernel(&self.name, started);
        Ok(())
    }
}
