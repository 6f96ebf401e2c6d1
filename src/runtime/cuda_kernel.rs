//! The fused op on an NVIDIA GPU: the CUDA kernel compiled by NVRTC for the
//! device's architecture and launched through cudarc, as the op's plan says.

use super::tensor::Tensor;
use super::welch::{geometry, output_shape};
use super::{FusedKernel, RuntimeError};
use crate::analysis::Target;
use crate::analysis::plan::{DeviceLimits, MAX_THREADS};
use crate::fused::{LogMelAttrs, WelchPeaksAttrs};
use crate::lower::{self, KernelBuffer, KernelEntry, Launch, cuda, log_mel};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub struct CudaKernels {
    pub(super) ctx: Arc<CudaContext>,
    pub(super) stream: Arc<CudaStream>,
    /// `sm_XY` of device 0.
    pub arch: &'static str,
    pub device: String,
    /// What the driver reports of device 0, which `limits` are made of.
    pub attributes: CudaAttributes,
    /// The device's own limits, as the plan takes them ([`limits_of`]).
    limits: DeviceLimits,
    functions: Mutex<HashMap<(String, KernelEntry), CudaFunction>>,
    /// The log-mel kernels' entry points by specialisation and name.
    log_mel_functions: Mutex<HashMap<(String, &'static str), CudaFunction>>,
}

/// The key of a specialisation's module: its constants, and the plan's
/// form that picks the template and FFT length beside them (a one-pass plan
/// and an asked multi-pass plan of 4096 points in radix-2 stages share
/// every constant; a packed one-segment plan shares them with the unpacked
/// one).
pub(super) fn module_key(spec: &lower::Specialization) -> String {
    let k = &spec.kernel;
    format!("{:?} {} {:?} packed {}", spec.constants, k.plan, k.fft, k.packed)
}

pub(super) fn device_error(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Device { backend: "cuda", message: message.into() }
}

pub(super) fn driver_error(e: cudarc::driver::DriverError) -> RuntimeError {
    device_error(format!("{e:?}"))
}

impl CudaKernels {
    /// Device 0, or why it cannot be used.
    pub fn new() -> Result<Self, RuntimeError> {
        let ctx = context(0)?;
        if !cuda::nvrtc_available() {
            return Err(device_error("NVRTC not found (libnvrtc.so.12 on LD_LIBRARY_PATH)"));
        }
        let device = ctx.name().map_err(driver_error)?;
        let arch: &'static str = Box::leak(arch_of(&ctx)?.into_boxed_str());
        let stream = ctx.default_stream();
        let attributes = CudaAttributes::of(&ctx)?;
        let limits = limits_of(&attributes)?;
        Ok(CudaKernels { ctx, stream, arch, device, attributes, limits, functions: Mutex::new(HashMap::new()), log_mel_functions: Mutex::new(HashMap::new()) })
    }

    /// The device's limits, as the plan takes them.
    pub fn limits(&self) -> DeviceLimits {
        self.limits
    }

    /// Entry point `entry` of the specialisation's module, compiled once.
    pub(super) fn function(&self, spec: &lower::Specialization, entry: KernelEntry) -> Result<CudaFunction, RuntimeError> {
        let key = (module_key(spec), entry);
        if let Some(f) = self.functions.lock().expect("not poisoned").get(&key) {
            return Ok(f.clone());
        }
        let ptx = self.ptx_of(spec)?;
        self.load_module(&key.0, ptx)?;
        self.functions.lock().expect("not poisoned").get(&key).cloned().ok_or_else(|| device_error(format!("the kernel has no entry point `{entry}`")))
    }

    /// The specialisation's module as this device runs it: for its arch,
    /// in the source forms the environment asks for, the occupancy form's
    /// bound sharing out this device's SM. Every module the runtime loads
    /// is compiled here (`function`, and `precompile` for a grid).
    pub(super) fn ptx_of(&self, spec: &lower::Specialization) -> Result<String, RuntimeError> {
        let (_, ptx, _) = cuda::compile_on(spec, lower::Bindings::Buffers, self.arch, cuda::SourceForms::in_use(), self.attributes.sm_resources()?)?;
        Ok(ptx)
    }

    /// Whether the module of a specialisation is loaded.
    pub(super) fn has_module(&self, key: &str) -> bool {
        self.functions.lock().expect("not poisoned").keys().any(|(k, _)| k == key)
    }

    /// Load a compiled module and keep its entry points under `key`.
    pub(super) fn load_module(&self, key: &str, ptx: String) -> Result<(), RuntimeError> {
        let module = self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(|e| device_error(format!("loading the kernel: {e:?}")))?;
        let mut functions = self.functions.lock().expect("not poisoned");
        // A module holds the entry points of its FFT form only: the others are not found.
        for entry in KernelEntry::ALL {
            if let Ok(f) = module.load_function(entry.name()) {
                functions.insert((key.to_string(), entry), f);
            }
        }
        Ok(())
    }

    /// The specialisation for operands already checked against the
    /// attributes (`geometry`), and their device copies, each checked against
    /// the plan's lengths: CUDA has no robust buffer access, so a short buffer
    /// would be read past its end.
    pub(super) fn prepare(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Prepared, RuntimeError> {
        let spec = lower::specialize_for(attrs, &input.shape, Target::Cuda, &self.limits)?;
        let ones = [1.0f32];
        let window = window.map_or(&ones[..], |w| &w.data[..]);
        RuntimeError::check_buffer("cuda", "input", input.data.len(), spec.kernel.input_len)?;
        RuntimeError::check_buffer("cuda", "window", window.len(), spec.kernel.window_len)?;
        let mut buffers = DeviceBuffers::default();
        buffers.put(KernelBuffer::Segments, self.stream.clone_htod(&input.data).map_err(driver_error)?);
        buffers.put(KernelBuffer::Window, self.stream.clone_htod(window).map_err(driver_error)?);
        buffers.put(KernelBuffer::Peaks, self.stream.alloc_zeros::<f32>(spec.kernel.output_len as usize).map_err(driver_error)?);
        Ok(Prepared { spec, buffers })
    }

    pub(super) fn config(&self, spec: &lower::Specialization, groups: u64) -> LaunchConfig {
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
        let Prepared { spec, mut buffers } = self.prepare(attrs, input, window)?;
        let launches = lower::launches(&spec.kernel);
        self.add_scratch(&spec, &launches, &mut buffers)?;
        let mut times = Vec::with_capacity(runs);
        for i in 0..=runs {
            self.stream.synchronize().map_err(driver_error)?;
            let start = std::time::Instant::now();
            self.launch(&spec, &launches, &mut buffers)?;
            self.stream.synchronize().map_err(driver_error)?;
            if i > 0 {
                times.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    /// The scratch buffers the launches bind besides the operands and the
    /// peaks (the multi-pass spectra, the split plans' partial spectra),
    /// zeroed at the plan's lengths.
    pub(super) fn add_scratch(&self, spec: &lower::Specialization, launches: &[Launch], buffers: &mut DeviceBuffers) -> Result<(), RuntimeError> {
        for buffer in lower::buffers_of(launches) {
            if !buffers.has(buffer) {
                buffers.put(buffer, self.stream.alloc_zeros::<f32>(buffer.f32_len(&spec.kernel) as usize).map_err(driver_error)?);
            }
        }
        Ok(())
    }

    /// Every launch of the plan, in order on the stream, with `buffers`
    /// holding every buffer they bind ([`Self::prepare`], [`Self::add_scratch`]).
    pub(super) fn launch(&self, spec: &lower::Specialization, launches: &[Launch], buffers: &mut DeviceBuffers) -> Result<(), RuntimeError> {
        let resolved = launches.iter().map(|l| Ok((*l, self.function(spec, l.entry)?))).collect::<Result<Vec<_>, RuntimeError>>()?;
        self.launch_resolved(spec, &resolved, buffers)
    }

    /// [`Self::launch`] with each launch's function already looked up (a
    /// timed loop looks them up once).
    pub(super) fn launch_resolved(&self, spec: &lower::Specialization, launches: &[(Launch, CudaFunction)], buffers: &mut DeviceBuffers) -> Result<(), RuntimeError> {
        for (launch, f) in launches {
            // The written buffer is taken out while the launch borrows it
            // mutably and the buffers it reads immutably, then put back.
            let mut written = buffers.take(launch.writes())?;
            let launched = (|| {
                let mut builder = self.stream.launch_builder(f);
                for read in launch.reads() {
                    builder.arg(buffers.get(*read)?);
                }
                builder.arg(&mut written);
                if let Some(stage) = &launch.stage {
                    builder.arg(stage);
                }
                // SAFETY: `prepare` checked the operands against the plan's
                // lengths, which the kernels index within, and `add_scratch`
                // allocated the scratch buffers at the plan's lengths.
                unsafe { builder.launch(self.config(spec, launch.groups)) }.map(drop).map_err(driver_error)
            })();
            buffers.put(launch.writes(), written);
            launched?;
        }
        Ok(())
    }
}

/// Device `ordinal`'s context, or why there is none (no driver, no such
/// device).
fn context(ordinal: usize) -> Result<Arc<CudaContext>, RuntimeError> {
    // SAFETY: only probes whether the shared library can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(device_error("no CUDA driver found (libcuda.so)"));
    }
    CudaContext::new(ordinal).map_err(|e| device_error(format!("no usable GPU: {e:?}")))
}

/// NVRTC's name for the device's architecture (`sm_90` on an H100).
fn arch_of(ctx: &CudaContext) -> Result<String, RuntimeError> {
    let (major, minor) = ctx.compute_capability().map_err(driver_error)?;
    Ok(format!("sm_{major}{minor}"))
}

/// Device `ordinal` as a plan and NVRTC take it, read from the driver
/// alone (NVRTC need not load): its limits before the CUDA forms' defaults
/// and the environment's overrides ([`limits_of`] applies them) and its
/// arch. rlx-ext plans and compiles
/// for RLX's CUDA device with it (RLX's backend opens device 0).
pub fn device_of(ordinal: usize) -> Result<(CudaAttributes, String), RuntimeError> {
    let ctx = context(ordinal)?;
    Ok((CudaAttributes::of(&ctx)?, arch_of(&ctx)?))
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
    pub registers_per_multiprocessor: i32,
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
            registers_per_multiprocessor: get(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        })
    }

    /// What the occupancy form's launch bounds share out on an SM of this
    /// device (`lower::cuda::occupancy_bounds`). A driver reporting a
    /// non-positive figure is an error.
    pub fn sm_resources(&self) -> Result<cuda::SmResources, RuntimeError> {
        Ok(cuda::SmResources { registers: positive("registers per multiprocessor", self.registers_per_multiprocessor)?, blocks: positive("blocks per multiprocessor", self.blocks_per_multiprocessor)? })
    }
}

/// A figure the driver reports (`what`), which must be positive: a device
/// of zero multiprocessors or registers is a driver's error, not a plan.
fn positive<T: TryFrom<i32>>(what: &str, v: i32) -> Result<T, RuntimeError> {
    T::try_from(v).ok().filter(|_| v > 0).ok_or_else(|| device_error(format!("the driver reports {v} {what}")))
}

/// A device's limits for the plan: its shared memory per block, and as
/// parallelism the blocks of the kernels' widest size (256 threads) it
/// keeps resident, every multiprocessor full (an H100: 132 × 8 = 1056, the
/// figure `DeviceLimits::assumed` takes for every CUDA device when a graph
/// is compiled for no device in particular), with the CUDA forms as they
/// are by default or as the environment overrides them. A driver reporting
/// a non-positive figure is an error, not a plan for zero workers.
pub fn limits_of(a: &CudaAttributes) -> Result<DeviceLimits, RuntimeError> {
    let multiprocessors: u64 = positive("multiprocessors", a.multiprocessors)?;
    let shared: u64 = positive("bytes of shared memory per block", a.shared_bytes_per_block)?;
    let threads: u64 = positive("threads per multiprocessor", a.threads_per_multiprocessor)?;
    let blocks: u64 = positive("blocks per multiprocessor", a.blocks_per_multiprocessor)?;
    let resident = (threads / MAX_THREADS as u64).clamp(1, blocks);
    Ok(DeviceLimits { max_workgroup_bytes: shared, parallelism: multiprocessors * resident, ..DeviceLimits::assumed(Target::Cuda) }.with_cuda_opt_ins())
}

/// The device buffers of one run, by role: the operands and the peaks
/// ([`CudaKernels::prepare`]), then the scratch buffers ([`CudaKernels::add_scratch`]).
#[derive(Default)]
pub(super) struct DeviceBuffers(Vec<(KernelBuffer, CudaSlice<f32>)>);

impl DeviceBuffers {
    fn has(&self, role: KernelBuffer) -> bool {
        self.0.iter().any(|(r, _)| *r == role)
    }

    fn put(&mut self, role: KernelBuffer, buffer: CudaSlice<f32>) {
        self.0.push((role, buffer));
    }

    fn missing(role: KernelBuffer) -> RuntimeError {
        // Every buffer a launch binds was made first: a miss is a bug, reported, not a panic.
        device_error(format!("no {} buffer for the plan's launches", role.name()))
    }

    pub(super) fn get(&self, role: KernelBuffer) -> Result<&CudaSlice<f32>, RuntimeError> {
        self.0.iter().find(|(r, _)| *r == role).map(|(_, b)| b).ok_or_else(|| Self::missing(role))
    }

    fn take(&mut self, role: KernelBuffer) -> Result<CudaSlice<f32>, RuntimeError> {
        let at = self.0.iter().position(|(r, _)| *r == role).ok_or_else(|| Self::missing(role))?;
        Ok(self.0.swap_remove(at).1)
    }
}

pub(super) struct Prepared {
    pub(super) spec: lower::Specialization,
    pub(super) buffers: DeviceBuffers,
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
        let Prepared { spec, mut buffers } = self.prepare(attrs, input, window)?;
        let launches = lower::launches(&spec.kernel);
        self.add_scratch(&spec, &launches, &mut buffers)?;
        self.launch(&spec, &launches, &mut buffers)?;
        let data = self.stream.clone_dtoh(buffers.get(KernelBuffer::Peaks)?).map_err(driver_error)?;
        Ok(Tensor::new(output_shape(attrs, &g), data))
    }

    /// The log-mel launches ([`log_mel::launches`]), as wgpu runs them: the
    /// filters' bands, then a block per frame.
    fn run_log_mel(&self, attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        let g = super::log_mel::geometry(attrs, input.view(), filters.view(), window.map(Tensor::view))?;
        if g.rows == 0 {
            // Nothing to compute, and CUDA has no zero-length buffers.
            return Ok(Tensor::zeros(g.out_shape));
        }
        let mut plan = self.resident_log_mel(attrs, input, filters, window)?;
        self.launch_log_mel(&mut plan, &log_mel::LogMelEntry::ALL)?;
        Ok(Tensor::new(g.out_shape, self.mels_of(&plan)?))
    }
}

/// A log-mel op's operands and result on the device, its functions looked
/// up: launched once by `run_log_mel`, again and again when timed.
pub struct ResidentLogMel {
    pub spec: log_mel::LogMelSpec,
    functions: Vec<(log_mel::LogMelLaunch, CudaFunction)>,
    frames: CudaSlice<f32>,
    window: CudaSlice<f32>,
    weights: CudaSlice<f32>,
    bands: CudaSlice<u32>,
    mels: CudaSlice<f32>,
}

impl CudaKernels {
    /// The log-mel plan of `attrs` for `input` (at least one row), its
    /// operands uploaded, its bands and result allocated.
    pub fn resident_log_mel(&self, attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<ResidentLogMel, RuntimeError> {
        let spec = log_mel::specialize(attrs, &input.shape, Target::Cuda, &self.limits)?;
        let ones = [1.0f32];
        let window = window.map_or(&ones[..], |w| &w.data[..]);
        // CUDA has no robust buffer access: every buffer is the plan's length.
        RuntimeError::check_buffer("cuda", "input", input.data.len(), spec.input_len)?;
        RuntimeError::check_buffer("cuda", "window", window.len(), spec.window_len)?;
        RuntimeError::check_buffer("cuda", "filters", filters.data.len(), spec.filters_len)?;
        let upload = |data: &[f32]| self.stream.clone_htod(data).map_err(driver_error);
        let functions = log_mel::launches(&spec).into_iter().map(|l| Ok((l, self.log_mel_function(&spec, l.entry)?))).collect::<Result<_, RuntimeError>>()?;
        Ok(ResidentLogMel {
            frames: upload(&input.data)?,
            window: upload(window)?,
            weights: upload(&filters.data)?,
            bands: self.stream.alloc_zeros::<u32>(log_mel::LogMelBuffer::Bands.len(&spec) as usize).map_err(driver_error)?,
            mels: self.stream.alloc_zeros::<f32>(spec.output_len as usize).map_err(driver_error)?,
            functions,
            spec,
        })
    }

    /// Enqueue the launches of `plan` whose entry is in `entries`, in the
    /// plan's order (no synchronisation): both to run the op; the frames'
    /// alone to time them once the bands are found.
    pub fn launch_log_mel(&self, plan: &mut ResidentLogMel, entries: &[log_mel::LogMelEntry]) -> Result<(), RuntimeError> {
        for (launch, f) in plan.functions.iter().filter(|(l, _)| entries.contains(&l.entry)) {
            let (x, y) = launch.grid();
            let config = LaunchConfig { grid_dim: (x, y, 1), block_dim: (launch.threads, 1, 1), shared_mem_bytes: 0 };
            let mut builder = self.stream.launch_builder(f);
            match launch.entry {
                log_mel::LogMelEntry::MelBands => builder.arg(&plan.weights).arg(&mut plan.bands),
                log_mel::LogMelEntry::LogMel => builder.arg(&plan.frames).arg(&plan.window).arg(&plan.weights).arg(&plan.bands).arg(&mut plan.mels),
            };
            // SAFETY: every buffer was checked against (or allocated at) the
            // plan's lengths, which the kernels index within; the arguments
            // follow `LogMelEntry::buffers`' order, the kernels' signatures.
            unsafe { builder.launch(config) }.map(drop).map_err(driver_error)?;
        }
        Ok(())
    }

    /// The result of the last run of a resident log-mel plan.
    pub fn mels_of(&self, plan: &ResidentLogMel) -> Result<Vec<f32>, RuntimeError> {
        self.stream.clone_dtoh(&plan.mels).map_err(driver_error)
    }
}

impl CudaKernels {
    /// Entry point `entry` of a log-mel specialisation's module, compiled once.
    fn log_mel_function(&self, spec: &log_mel::LogMelSpec, entry: log_mel::LogMelEntry) -> Result<CudaFunction, RuntimeError> {
        let key = (format!("{:?}", spec.constants), entry.name());
        if let Some(f) = self.log_mel_functions.lock().expect("not poisoned").get(&key) {
            return Ok(f.clone());
        }
        let (_, ptx, _) = log_mel::compile_cuda(spec, self.arch)?;
        let module = self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(|e| device_error(format!("loading the kernel: {e:?}")))?;
        let mut functions = self.log_mel_functions.lock().expect("not poisoned");
        for e in log_mel::LogMelEntry::ALL {
            let f = module.load_function(e.name()).map_err(|err| device_error(format!("the log-mel kernel has no entry point `{}`: {err:?}", e.name())))?;
            functions.insert((key.0.clone(), e.name()), f);
        }
        functions.get(&key).cloned().ok_or_else(|| device_error(format!("the log-mel kernel has no entry point `{}`", entry.name())))
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

    /// CUDA events around back-to-back launches over about 30 ms (the
    /// roofline bench's timer), operands uploaded once.
    fn resident_ns(&self, attrs: &WelchPeaksAttrs, input: &Tensor) -> Result<Option<f64>, RuntimeError> {
        let mut plan = self.resident(attrs, input, None)?;
        Ok(Some(self.time_us(30.0, &mut || self.launch_resident(&mut plan))? * 1e3))
    }

    /// The frames' launch alone, timed as `resident_ns`.
    fn resident_log_mel_ns(&self, attrs: &LogMelAttrs, frames: &Tensor, filters: &Tensor) -> Result<Option<f64>, RuntimeError> {
        Ok(Some(self.time_log_mel_us(attrs, frames, filters, 30.0)? * 1e3))
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
        CudaAttributes { multiprocessors, shared_bytes_per_block: 48 * 1024, threads_per_multiprocessor, blocks_per_multiprocessor: 32, registers_per_multiprocessor: 65536 }
    }

    /// Plans that share every constant but not their form (packed or not,
    /// one pass or several) get modules of their own.
    #[test]
    fn a_module_key_tells_plans_of_the_same_constants_apart() {
        use crate::fused::{PlanName, WelchPeaksAttrs};
        let spec = |attrs: &WelchPeaksAttrs, limits: &DeviceLimits| lower::specialize_for(attrs, &[6, 4096], Target::Cuda, limits).unwrap();
        let cuda = DeviceLimits::assumed(Target::Cuda);
        let one = WelchPeaksAttrs::rlx(4096, 1, 4);
        let (paired, packed) = (spec(&one, &DeviceLimits { packed_segment: false, ..cuda }), spec(&one, &cuda));
        assert_eq!(paired.constants, packed.constants);
        assert_ne!(module_key(&paired), module_key(&packed));
        // The radix-2 stages (no constants of their own beside the one-pass
        // kernel's): the key's FFT form tells them apart.
        let asked = WelchPeaksAttrs { plan: Some(PlanName::Multipass), ..one };
        let stages = DeviceLimits { four_step: false, packed_segment: false, ..cuda };
        assert_ne!(module_key(&paired), module_key(&spec(&asked, &stages)));
    }

    /// The plan takes each GPU's own multiprocessors: an H100's are the
    /// figure assumed at compile time, an A100 or an RTX 4090 have fewer.
    #[test]
    fn limits_are_the_devices_own() {
        assert_eq!(limits_of(&gpu(132, 2048)).unwrap(), DeviceLimits::assumed(Target::Cuda).with_cuda_opt_ins());
        assert_eq!(limits_of(&gpu(108, 2048)).unwrap().parallelism, 864);
        assert_eq!(limits_of(&gpu(128, 1536)).unwrap().parallelism, 768);
        // Fewer resident blocks than the threads allow: the block limit rules.
        assert_eq!(limits_of(&CudaAttributes { blocks_per_multiprocessor: 4, ..gpu(10, 2048) }).unwrap().parallelism, 40);
        let small = CudaAttributes { shared_bytes_per_block: 16 * 1024, ..gpu(10, 2048) };
        assert_eq!(limits_of(&small).unwrap().max_workgroup_bytes, 16 * 1024);
        let err = limits_of(&gpu(0, 2048)).unwrap_err().to_string();
        assert_eq!(err, "the driver reports 0 multiprocessors");
    }

    /// The occupancy bounds share out the device's own SM: an H100's
    /// registers and 32 blocks, an RTX 3090's (sm_86) 16 blocks.
    #[test]
    fn occupancy_takes_the_devices_own_sm() {
        assert_eq!(gpu(132, 2048).sm_resources().unwrap(), cuda::SmResources::SM_90);
        let sm_86 = CudaAttributes { blocks_per_multiprocessor: 16, ..gpu(82, 1536) };
        assert_eq!(sm_86.sm_resources().unwrap(), cuda::SmResources { registers: 65536, blocks: 16 });
        let err = CudaAttributes { registers_per_multiprocessor: -1, ..gpu(1, 2048) }.sm_resources().unwrap_err().to_string();
        assert_eq!(err, "the driver reports -1 registers per multiprocessor");
    }
}
