//! Timing CUDA work the way a benchmark against other GPU code must: the
//! operands resident on the device, CUDA events around the launches (the
//! GPU's clock: no transfer in the figure), every module compiled before
//! the first timed window (NVRTC on every core at once), and each launch's
//! function looked up once.

use super::RuntimeError;
use super::cuda_kernel::{CudaKernels, DeviceBuffers, Prepared, device_error, driver_error, module_key};
use super::tensor::Tensor;
use super::welch::geometry;
use crate::fused::{LogMelAttrs, WelchPeaksAttrs};
use crate::lower::log_mel::LogMelEntry;
use crate::lower::{self, KernelBuffer, Launch};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream};
use std::sync::Arc;

/// A plan ready to launch again and again: its operands and scratch
/// buffers on the device, its functions looked up.
pub struct ResidentPlan {
    pub spec: lower::Specialization,
    launches: Vec<(Launch, CudaFunction)>,
    buffers: DeviceBuffers,
}

impl ResidentPlan {
    /// The input on the device (for other pipelines timed on the same bytes).
    pub fn input(&self) -> Result<&cudarc::driver::CudaSlice<f32>, RuntimeError> {
        self.buffers.get(KernelBuffer::Segments)
    }
}

impl CudaKernels {
    /// The stream every kernel of this device runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Compile the modules of `specs` not yet loaded, NVRTC on every core
    /// (a grid of shapes needs hundreds), then load them.
    pub fn precompile(&self, specs: &[lower::Specialization]) -> Result<(), RuntimeError> {
        use rayon::prelude::*;
        // Each module once, keyed as `function` looks it up.
        let wanted: std::collections::BTreeMap<String, &lower::Specialization> =
            specs.iter().map(|s| (module_key(s), s)).filter(|(key, _)| !self.has_module(key)).collect();
        let compiled: Vec<(String, String)> = wanted
            .into_par_iter()
            .map(|(key, s)| self.ptx_of(s).map(|ptx| (key, ptx)))
            .collect::<Result<_, _>>()?;
        for (key, ptx) in compiled {
            self.load_module(&key, ptx)?;
        }
        Ok(())
    }

    /// The plan of `attrs` for `input` on this device, its operands
    /// uploaded and its scratch allocated.
    pub fn resident(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<ResidentPlan, RuntimeError> {
        let g = geometry(attrs, input.view(), window.map(Tensor::view))?;
        if g.batch == 0 {
            return Err(device_error("an empty batch has no kernel to time"));
        }
        let Prepared { spec, mut buffers } = self.prepare(attrs, input, window)?;
        let plain = lower::launches(&spec.kernel);
        self.add_scratch(&spec, &plain, &mut buffers)?;
        let launches = plain.iter().map(|l| Ok((*l, self.function(&spec, l.entry)?))).collect::<Result<_, RuntimeError>>()?;
        Ok(ResidentPlan { spec, launches, buffers })
    }

    /// Enqueue every launch of a resident plan (no synchronisation).
    pub fn launch_resident(&self, plan: &mut ResidentPlan) -> Result<(), RuntimeError> {
        self.launch_resolved(&plan.spec, &plan.launches, &mut plan.buffers)
    }

    /// The peaks of the last run of a resident plan.
    pub fn peaks_of(&self, plan: &ResidentPlan) -> Result<Vec<f32>, RuntimeError> {
        self.stream.clone_dtoh(plan.buffers.get(KernelBuffer::Peaks)?).map_err(driver_error)
    }

    /// Mean µs per call of `call` (work enqueued on this device's stream),
    /// by CUDA events around as many back-to-back calls as fill about
    /// `window_ms` (3 to 10,000), after one untimed call. Back to back, a
    /// call's figure includes the gap between launches: for tiny kernels,
    /// the latency a caller sees.
    pub fn time_us(&self, window_ms: f64, call: &mut dyn FnMut() -> Result<(), RuntimeError>) -> Result<f64, RuntimeError> {
        call()?;
        self.stream.synchronize().map_err(driver_error)?;
        let once = self.timed_us(1, call)?;
        let runs = (window_ms * 1e3 / once.max(0.5)).clamp(3.0, 10_000.0) as usize;
        self.timed_us(runs, call)
    }

    fn timed_us(&self, runs: usize, call: &mut dyn FnMut() -> Result<(), RuntimeError>) -> Result<f64, RuntimeError> {
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(flags).map_err(driver_error)?;
        for _ in 0..runs {
            call()?;
        }
        let end = self.stream.record_event(flags).map_err(driver_error)?;
        Ok(start.elapsed_ms(&end).map_err(driver_error)? as f64 * 1e3 / runs as f64)
    }

    /// Mean µs of the log-mel op's frames launch on `frames` (`time_us`
    /// over `window_ms`), its operands uploaded once and the filters' bands
    /// found before the timing.
    pub fn time_log_mel_us(&self, attrs: &LogMelAttrs, frames: &Tensor, filters: &Tensor, window_ms: f64) -> Result<f64, RuntimeError> {
        let mut plan = self.resident_log_mel(attrs, frames, filters, None)?;
        self.launch_log_mel(&mut plan, &[LogMelEntry::MelBands])?;
        self.time_us(window_ms, &mut || self.launch_log_mel(&mut plan, &[LogMelEntry::LogMel]))
    }

    /// The device's copy bandwidth in GB/s (bytes read plus bytes written
    /// per second) over a device-to-device copy of `bytes`: the memory
    /// roofline a kernel reading that many bytes is held to.
    pub fn copy_gbps(&self, bytes: usize, window_ms: f64) -> Result<f64, RuntimeError> {
        let values = (bytes / 4).max(1);
        let source = self.stream.clone_htod(&vec![1.0f32; values]).map_err(driver_error)?;
        let mut target = self.stream.alloc_zeros::<f32>(values).map_err(driver_error)?;
        let us = self.time_us(window_ms, &mut || self.stream.memcpy_dtod(&source, &mut target).map_err(driver_error))?;
        Ok(2.0 * (values * 4) as f64 / (us * 1e-6) / 1e9)
    }
}
