//! The fused op on an NVIDIA GPU: the CUDA kernel compiled by NVRTC for the
//! device's architecture and launched through cudarc, as the op's plan says.

use super::tensor::Tensor;
use super::welch::{geometry, output_shape};
use super::{FusedKernel, RuntimeError};
use crate::analysis::Target;
use crate::analysis::plan::{DeviceLimits, FftPlan, MAX_THREADS};
use crate::fused::WelchPeaksAttrs;
use crate::lower::{self, cuda};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub struct CudaKernels {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// `sm_XY` of device 0.
    pub arch: &'static str,
    pub device: String,
    /// What the driver reports of device 0, which `limits` are made of.
    pub attributes: CudaAttributes,
    /// The device's own limits, as the plan takes them ([`limits_of`]).
    limits: DeviceLimits,
    functions: Mutex<HashMap<(String, &'static str), CudaFunction>>,
}

fn device_error(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Device { backend: "cuda", message: message.into() }
}

fn driver_error(e: cudarc::driver::DriverError) -> RuntimeError {
    device_error(format!("{e:?}"))
}

impl CudaKernels {
    /// Device 0, or why it cannot be used.
    pub fn new() -> Result<Self, RuntimeError> {
        // SAFETY: only probes whether the shared libraries can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(device_error("no CUDA driver found (libcuda.so)"));
        }
        if !cuda::nvrtc_available() {
            return Err(device_error("NVRTC not found (libnvrtc.so.12 on LD_LIBRARY_PATH)"));
        }
        let ctx = CudaContext::new(0).map_err(|e| device_error(format!("no usable GPU: {e:?}")))?;
        let device = ctx.name().map_err(driver_error)?;
        let (major, minor) = ctx.compute_capability().map_err(driver_error)?;
        let arch: &'static str = Box::leak(format!("sm_{major}{minor}").into_boxed_str());
        let stream = ctx.default_stream();
        let attributes = CudaAttributes::of(&ctx)?;
        let limits = limits_of(&attributes)?;
        Ok(CudaKernels { ctx, stream, arch, device, attributes, limits, functions: Mutex::new(HashMap::new()) })
    }

    /// The device's limits, as the plan takes them.
    pub fn limits(&self) -> DeviceLimits {
        self.limits
    }

    /// Entry point `name` of the specialisation's module, compiled once.
    fn function(&self, spec: &lower::Specialization, name: &'static str) -> Result<CudaFunction, RuntimeError> {
        let key = (format!("{:?}", spec.constants), name);
        if let Some(f) = self.functions.lock().expect("not poisoned").get(&key) {
            return Ok(f.clone());
        }
        let (_, ptx, _) = cuda::compile(spec, self.arch)?;
        let module = self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(|e| device_error(format!("loading the kernel: {e:?}")))?;
        let mut functions = self.functions.lock().expect("not poisoned");
        for entry in ["welch_peaks", "load", "stage", "peaks_of", "partial_psd", "partial_of", "peaks_of_partials"] {
            if let Ok(f) = module.load_function(entry) {
                functions.insert((key.0.clone(), entry), f);
            }
        }
        functions.get(&key).cloned().ok_or_else(|| device_error(format!("the kernel has no entry point `{name}`")))
    }

    /// The specialisation for operands already checked against the
    /// attributes (`geometry`), and their device copies, each checked against
    /// the plan's lengths: CUDA has no robust buffer access, so a short buffer
    /// would be read past its end.
    fn prepare(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Prepared, RuntimeError> {
        let spec = lower::specialize_for(attrs, &input.shape, Target::Cuda, &self.limits)?;
        let ones = [1.0f32];
        let window = window.map_or(&ones[..], |w| &w.data[..]);
        RuntimeError::check_buffer("cuda", "input", input.data.len(), spec.kernel.input_len)?;
        RuntimeError::check_buffer("cuda", "window", window.len(), spec.kernel.window_len)?;
        let segs = self.stream.clone_htod(&input.data).map_err(driver_error)?;
        let window = self.stream.clone_htod(window).map_err(driver_error)?;
        let peaks = self.stream.alloc_zeros::<f32>(spec.kernel.output_len as usize).map_err(driver_error)?;
        Ok(Prepared { spec, segs, window, peaks })
    }

    fn config(&self, spec: &lower::Specialization, groups: u64) -> LaunchConfig {
        let (x, y) = lower::grid(groups);
        LaunchConfig { grid_dim: (x, y, 1), block_dim: (spec.kernel.threads, 1, 1), shared_mem_bytes: 0 }
    }

    /// Median kernel time in ms over `runs` calls of the plan's launches on
    /// data already on the device (what a benchmark against other GPU code
    /// should compare, and what calibration fits: a calibration input's
    /// transfers swamp the differences of its kernels). The scratch buffers
    /// are allocated before the first call, outside every timed window, as
    /// the operands are; one untimed call warms up. `runs` must be at least 1.
    pub fn time_kernel(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>, runs: usize) -> Result<f64, RuntimeError> {
        if runs == 0 {
            return Err(device_error("time_kernel: no run to time (runs = 0)"));
        }
        geometry(attrs, input.view(), window.map(Tensor::view))?;
        let Prepared { spec, segs, window, mut peaks } = self.prepare(attrs, input, window)?;
        let mut scratch = self.scratch(&spec)?;
        let mut times = Vec::with_capacity(runs);
        for i in 0..=runs {
            self.stream.synchronize().map_err(driver_error)?;
            let start = std::time::Instant::now();
            self.launch_with(&spec, &segs, &window, &mut peaks, &mut scratch)?;
            self.stream.synchronize().map_err(driver_error)?;
            if i > 0 {
                times.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    /// The scratch buffers a plan's launches need: the split plans' partial
    /// spectra, the multi-pass spectra.
    fn scratch(&self, spec: &lower::Specialization) -> Result<Scratch, RuntimeError> {
        let k = &spec.kernel;
        let partials = match k.plan.is_split() {
            true => Some(self.stream.alloc_zeros::<f32>(k.partials_len as usize).map_err(driver_error)?),
            false => None,
        };
        let spectra = match k.fft {
            FftPlan::MultiPass => Some(self.stream.alloc_zeros::<f32>(2 * k.spectra_len as usize).map_err(driver_error)?),
            FftPlan::OnePass => None,
        };
        Ok(Scratch { partials, spectra })
    }

    /// Every launch of the plan, in order on the stream, with scratch
    /// buffers of its own.
    fn launch(&self, spec: &lower::Specialization, segs: &CudaSlice<f32>, window: &CudaSlice<f32>, peaks: &mut CudaSlice<f32>) -> Result<(), RuntimeError> {
        let mut scratch = self.scratch(spec)?;
        self.launch_with(spec, segs, window, peaks, &mut scratch)
    }

    /// Every launch of the plan, in order on the stream, with `scratch` from
    /// [`Self::scratch`] for the same specialisation.
    fn launch_with(&self, spec: &lower::Specialization, segs: &CudaSlice<f32>, window: &CudaSlice<f32>, peaks: &mut CudaSlice<f32>, scratch: &mut Scratch) -> Result<(), RuntimeError> {
        // SAFETY (every launch below): `prepare` checked every buffer against
        // the plan's lengths, which the kernels index within, and `scratch`
        // allocated the scratch buffers at the plan's lengths.
        let k = &spec.kernel;
        let Scratch { partials, spectra } = scratch;
        match (k.fft, partials.as_mut(), spectra.as_mut()) {
            (FftPlan::OnePass, None, _) => {
                let f = self.function(spec, cuda::ENTRY)?;
                let mut launch = self.stream.launch_builder(&f);
                launch.arg(segs).arg(window).arg(&mut *peaks);
                unsafe { launch.launch(self.config(spec, k.groups)) }.map_err(driver_error)?;
            }
            (FftPlan::OnePass, Some(partials), _) => {
                let f = self.function(spec, "partial_psd")?;
                let mut launch = self.stream.launch_builder(&f);
                launch.arg(segs).arg(window).arg(partials);
                unsafe { launch.launch(self.config(spec, k.groups * k.chunks)) }.map_err(driver_error)?;
            }
            (FftPlan::MultiPass, _, None) => return Err(device_error("a multi-pass plan without its spectra buffer")),
            (FftPlan::MultiPass, partials, Some(spectra)) => {
                let threads = k.threads as u64;
                let load = self.function(spec, "load")?;
                let mut launch = self.stream.launch_builder(&load);
                launch.arg(segs).arg(window).arg(&mut *spectra);
                unsafe { launch.launch(self.config(spec, k.spectra_len.div_ceil(threads))) }.map_err(driver_error)?;
                let stage = self.function(spec, "stage")?;
                for s in 0..k.log2n {
                    let mut launch = self.stream.launch_builder(&stage);
                    launch.arg(&mut *spectra).arg(&s);
                    unsafe { launch.launch(self.config(spec, (k.spectra_len / 2).div_ceil(threads))) }.map_err(driver_error)?;
                }
                match partials {
                    None => {
                        let peaks_of = self.function(spec, "peaks_of")?;
                        let mut launch = self.stream.launch_builder(&peaks_of);
                        launch.arg(&*spectra).arg(&mut *peaks);
                        unsafe { launch.launch(self.config(spec, k.groups)) }.map_err(driver_error)?;
                    }
                    Some(partials) => {
                        let partial_of = self.function(spec, "partial_of")?;
                        let mut launch = self.stream.launch_builder(&partial_of);
                        launch.arg(&*spectra).arg(partials);
                        unsafe { launch.launch(self.config(spec, k.groups * k.chunks)) }.map_err(driver_error)?;
                    }
                }
            }
        }
        if let Some(partials) = &scratch.partials {
            let f = self.function(spec, "peaks_of_partials")?;
            let mut launch = self.stream.launch_builder(&f);
            launch.arg(partials).arg(&mut *peaks);
            unsafe { launch.launch(self.config(spec, k.groups)) }.map_err(driver_error)?;
        }
        Ok(())
    }
}

/// What the plan needs to know of a CUDA device, as its driver reports it
/// (cuDeviceGetAttribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaAttributes {
    pub multiprocessors: i32,
    /// Static shared memory one block may declare (48 KiB on every GPU since
    /// Kepler; more only by opt-in, which the kernels do not take).
    pub shared_bytes_per_block: i32,
    pub threads_per_multiprocessor: i32,
    pub blocks_per_multiprocessor: i32,
}

impl CudaAttributes {
    fn of(ctx: &CudaContext) -> Result<Self, RuntimeError> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let get = |a: A| ctx.attribute(a).map_err(|e| device_error(format!("reading the device's {a:?}: {e:?}")));
        Ok(CudaAttributes {
            multiprocessors: get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            shared_bytes_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            threads_per_multiprocessor: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            blocks_per_multiprocessor: get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        })
    }
}

/// A device's limits for the plan: its shared memory per block, and as
/// parallelism the blocks of the kernels' widest size (256 threads) it
/// keeps resident, every multiprocessor full (an H100: 132 × 8 = 1056, the
/// figure `DeviceLimits::assumed` takes for every CUDA device when a graph
/// is compiled for no device in particular). A driver reporting a
/// non-positive figure is an error, not a plan for zero workers.
pub fn limits_of(a: &CudaAttributes) -> Result<DeviceLimits, RuntimeError> {
    let positive = |what: &str, v: i32| u64::try_from(v).ok().filter(|v| *v > 0).ok_or_else(|| device_error(format!("the driver reports {v} {what}")));
    let multiprocessors = positive("multiprocessors", a.multiprocessors)?;
    let shared = positive("bytes of shared memory per block", a.shared_bytes_per_block)?;
    let threads = positive("threads per multiprocessor", a.threads_per_multiprocessor)?;
    let blocks = positive("blocks per multiprocessor", a.blocks_per_multiprocessor)?;
    let resident = (threads / MAX_THREADS as u64).clamp(1, blocks);
    Ok(DeviceLimits { max_workgroup_bytes: shared, parallelism: multiprocessors * resident, ..DeviceLimits::assumed(Target::Cuda) })
}

/// A plan's scratch buffers on the device (see [`CudaKernels::scratch`]).
struct Scratch {
    partials: Option<CudaSlice<f32>>,
    spectra: Option<CudaSlice<f32>>,
}

struct Prepared {
    spec: lower::Specialization,
    segs: CudaSlice<f32>,
    window: CudaSlice<f32>,
    peaks: CudaSlice<f32>,
}

impl FusedKernel for CudaKernels {
    fn name(&self) -> String {
        format!("cuda ({}, {})", self.device, self.arch)
    }

    fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        let g = geometry(attrs, input.view(), window.map(Tensor::view))?;
        if g.batch == 0 {
            // Nothing to compute, and CUDA has no zero-length buffers.
            return Ok(Tensor::zeros(output_shape(attrs, &g)));
        }
        let Prepared { spec, segs, window, mut peaks } = self.prepare(attrs, input, window)?;
        self.launch(&spec, &segs, &window, &mut peaks)?;
        let data = self.stream.clone_dtoh(&peaks).map_err(driver_error)?;
        Ok(Tensor::new(output_shape(attrs, &g), data))
    }
}

impl super::calibrate::CalibrationDevice for CudaKernels {
    fn device_limits(&self) -> DeviceLimits {
        self.limits
    }

    /// Blocks resident at once, as the device reports its multiprocessors.
    fn workers(&self) -> u64 {
        self.limits.parallelism
    }

    fn resident_ns(&self, attrs: &WelchPeaksAttrs, input: &Tensor) -> Result<Option<f64>, RuntimeError> {
        // As many calls as fit in about 30 ms, 5 to 50 (as `time_ns`).
        let first = self.time_kernel(attrs, input, None, 1)?;
        let runs = (30.0 / first.max(1e-6)).clamp(5.0, 50.0) as usize;
        Ok(Some(self.time_kernel(attrs, input, None, runs)? * 1e6))
    }

    /// Median ns of copying `bytes` to the device, back, and within it.
    fn transfer_ns(&self, bytes: usize) -> Result<Option<(f64, f64, f64)>, RuntimeError> {
        // Written, not zeroed: an untouched zeroed allocation reads as one
        // shared page of zeros, and uploads faster than any real input.
        let host = vec![1.0f32; bytes / 4];
        let mut on_device = self.stream.alloc_zeros::<f32>(bytes / 4).map_err(driver_error)?;
        let synced = |r: Result<(), cudarc::driver::DriverError>| r.and_then(|_| self.stream.synchronize()).map_err(driver_error);
        let median = super::calibrate::median_ns;
        let source = self.stream.clone_htod(&host).map_err(driver_error)?;
        let upload = median(3, &mut || synced(self.stream.clone_htod(&host).map(drop)))?;
        let readback = median(3, &mut || synced(self.stream.clone_dtoh(&source).map(drop)))?;
        let copy = median(3, &mut || synced(self.stream.memcpy_dtod(&source, &mut on_device)))?;
        Ok(Some((upload, readback, copy)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(multiprocessors: i32, threads_per_multiprocessor: i32) -> CudaAttributes {
        CudaAttributes { multiprocessors, shared_bytes_per_block: 48 * 1024, threads_per_multiprocessor, blocks_per_multiprocessor: 32 }
    }

    /// The plan takes each GPU's own multiprocessors: an H100's are the
    /// figure assumed at compile time, an A100 or an RTX 4090 have fewer.
    #[test]
    fn limits_are_the_devices_own() {
        assert_eq!(limits_of(&gpu(132, 2048)).unwrap(), DeviceLimits::assumed(Target::Cuda));
        assert_eq!(limits_of(&gpu(108, 2048)).unwrap().parallelism, 864);
        assert_eq!(limits_of(&gpu(128, 1536)).unwrap().parallelism, 768);
        // Fewer resident blocks than the threads allow: the block limit rules.
        assert_eq!(limits_of(&CudaAttributes { blocks_per_multiprocessor: 4, ..gpu(10, 2048) }).unwrap().parallelism, 40);
        let small = CudaAttributes { shared_bytes_per_block: 16 * 1024, ..gpu(10, 2048) };
        assert_eq!(limits_of(&small).unwrap().max_workgroup_bytes, 16 * 1024);
        let err = limits_of(&gpu(0, 2048)).unwrap_err().to_string();
        assert_eq!(err, "the driver reports 0 multiprocessors");
    }
}
