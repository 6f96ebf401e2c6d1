//! The fused log-mel op registered with RLX: its op extension (shape
//! inference, verification) and its CPU kernel, which RLX also calls,
//! through the host, from GPU sessions (the op's `lowering: host`); and the
//! CPU kernels of the two ops a wgpu session runs it as
//! ([`crate::log_mel_ops`]), for a device that stages them through the host.

use crate::caller_share::share_rows_with_caller;
use crate::registration::{FusedOpExtension, FusedOpSignature, once_per_name, static_dims};
use crate::recording::record_kernel;
use rlx_cpu::op_registry::{CpuTensorMut, CpuTensorRef, register_cpu_kernel};
use rlx_ir::op_registry::register_op;
use rlx_ir::{DType, Shape};
use rlx_opt::fused::{LOG_MEL, LogMelAttrs};
use rlx_opt::runtime::TensorRef;
use rlx_opt::runtime::log_mel::{cpu_kernel_rows, geometry, mel_bands};
use std::sync::Arc;

/// The op extension and CPU kernel of `rlx_opt.log_mel`. Idempotent.
pub fn install_log_mel() {
    once_per_name(&format!("op:{LOG_MEL}"), || {
        register_op(Arc::new(FusedOpExtension::<LogMelOp>::new(LOG_MEL)));
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

/// The log-mel op as RLX's registry sees it.
struct LogMelOp;

impl FusedOpSignature for LogMelOp {
    const OPERAND_0: &'static str = "the frames";
    /// The frames and the filters; the window a third operand when the
    /// attributes say so.
    const MIN_INPUTS: usize = 2;

    /// The result shape of the op with `attrs` (JSON bytes) on frames of `input`.
    fn result_shape(attrs: &[u8], input: &Shape) -> Result<Shape, String> {
        let attrs = LogMelAttrs::from_bytes(attrs).map_err(|e| e.to_string())?;
        let ty = rlx_opt::analysis::plan::f32_type(&static_dims(input)?);
        let lead = attrs.lead_of(&ty).map_err(|e| e.to_string())?;
        let dims: Vec<usize> = lead.iter().map(|d| d.as_static().unwrap_or(0) as usize).chain([attrs.n_mels as usize]).collect();
        Ok(Shape::new(&dims, DType::F32))
    }

    fn operands(attrs: &[u8]) -> Option<usize> {
        LogMelAttrs::from_bytes(attrs).ok().map(|a| a.num_inputs() as usize)
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

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::op_registry::OpExtension;
    use rlx_ir::{Graph, Op};

    /// RLX's registry infers the op's shape and verifies its node through
    /// the shared extension: the result `[frames, n_mels]`, the operand
    /// count its attributes take (a window a third), and each mistake named.
    #[test]
    fn the_registry_infers_and_verifies_the_op() {
        let extension = FusedOpExtension::<LogMelOp>::new(LOG_MEL);
        let f32s = |dims: &[usize]| Shape::new(dims, DType::F32);
        let (frames, filters, window) = (f32s(&[37, 400]), f32s(&[80, 201]), f32s(&[400]));
        let plain = LogMelAttrs::frames(400, 80).to_bytes();
        let windowed = LogMelAttrs { window: true, ..LogMelAttrs::frames(400, 80) }.to_bytes();
        assert_eq!(extension.num_inputs(), 2);
        assert_eq!(extension.infer_shape(&[&frames, &filters], &plain).dims(), f32s(&[37, 80]).dims());
        // Attributes that do not parse: the operand's shape, and verify says why.
        assert_eq!(extension.infer_shape(&[&frames, &filters], b"{").dims(), frames.dims());
        let verify = |attrs: &[u8], result: &[usize], inputs: &[&Shape]| {
            let mut g = Graph::new("verify");
            let op = Op::Custom { name: LOG_MEL.into(), num_inputs: inputs.len() as u32, attrs: attrs.to_vec() };
            let id = g.add_node(op, vec![], f32s(result));
            extension.verify(g.node(id), inputs)
        };
        assert_eq!(verify(&plain, &[37, 80], &[&frames, &filters]), Vec::<String>::new());
        assert_eq!(verify(&windowed, &[37, 80], &[&frames, &filters, &window]), Vec::<String>::new());
        assert_eq!(verify(&windowed, &[37, 80], &[&frames, &filters]), [format!("{LOG_MEL}: 2 operands, the attributes need 3")]);
        let wrong = verify(&plain, &[37, 81], &[&frames, &filters]);
        assert!(wrong.len() == 1 && wrong[0].starts_with(&format!("{LOG_MEL}: result shape")), "{wrong:?}");
        assert_eq!(verify(&plain, &[37, 80], &[]), [format!("{LOG_MEL} takes the frames as operand 0")]);
        let unparsed = verify(b"{", &[37, 80], &[&frames, &filters]);
        assert!(unparsed.len() == 1 && unparsed[0].starts_with(&format!("{LOG_MEL}: ")), "{unparsed:?}");
    }
}
