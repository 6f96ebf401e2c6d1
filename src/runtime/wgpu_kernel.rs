//! The fused op on a GPU through wgpu and Vulkan: the WGSL kernel's SPIR-V
//! (written by naga) as compute pipelines, dispatched as the op's plan says.

use super::tensor::Tensor;
use super::welch::{geometry, output_shape};
use super::{FusedKernel, RuntimeError};
use crate::analysis::Target;
use crate::analysis::loop_budget::LAVAPIPE_LOOP_ITERATIONS;
use crate::analysis::plan::{DeviceLimits, FftPlan};
use crate::fused::WelchPeaksAttrs;
use crate::lower::{self, wgsl};
use std::collections::HashMap;
use std::sync::Mutex;

pub struct WgpuKernels {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// The adapter, as the driver names it (`llvmpipe (LLVM 15.0.6, 256 bits)`, say).
    pub adapter: String,
    /// The adapter's limits, as the lowering plan takes them.
    limits: DeviceLimits,
    /// A CPU adapter (lavapipe): workgroups run a thread each.
    cpu_adapter: bool,
    /// Pipelines by specialisation and entry point, built once.
    pipelines: Mutex<HashMap<String, wgpu::ComputePipeline>>,
}

fn device_error(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Device { backend: "wgpu", message: message.into() }
}

impl WgpuKernels {
    /// The first Vulkan adapter, or why there is none.
    pub fn new() -> Result<Self, RuntimeError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let options = wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() };
        let adapter = pollster::block_on(instance.request_adapter(&options))
            .map_err(|e| device_error(format!("no Vulkan adapter found ({e}); install a Vulkan driver (mesa-vulkan-drivers for lavapipe)")))?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let descriptor = wgpu::DeviceDescriptor { label: Some("rlx-run"), required_limits: limits.clone(), ..Default::default() };
        let (device, queue) = pollster::block_on(adapter.request_device(&descriptor)).map_err(|e| device_error(format!("cannot open {}: {e}", info.name)))?;
        let limits = DeviceLimits {
            max_binding_bytes: limits.max_storage_buffer_binding_size.min(limits.max_buffer_size),
            max_workgroup_bytes: limits.max_compute_workgroup_storage_size as u64,
            parallelism: parallelism_of(&info),
            max_loop_iterations: if info.device_type == wgpu::DeviceType::Cpu { LAVAPIPE_LOOP_ITERATIONS } else { u64::MAX },
        };
        let cpu_adapter = info.device_type == wgpu::DeviceType::Cpu;
        Ok(WgpuKernels { device, queue, adapter: info.name, limits, cpu_adapter, pipelines: Mutex::new(HashMap::new()) })
    }

    /// The adapter's limits, as the plan takes them.
    pub fn limits(&self) -> DeviceLimits {
        self.limits
    }

    /// The same adapter, planning with `limits` instead of its own: how a
    /// test reaches wgpu's own validation, which the plan otherwise keeps
    /// every kernel within.
    #[doc(hidden)]
    pub fn planning_with(mut self, limits: DeviceLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The pipeline of `entry` in the specialisation's module.
    fn pipeline(&self, spec: &lower::Specialization, entry: &str) -> Result<wgpu::ComputePipeline, RuntimeError> {
        let key = format!("{:?}/{entry}", spec.constants);
        if let Some(p) = self.pipelines.lock().expect("not poisoned").get(&key) {
            return Ok(p.clone());
        }
        let words = wgsl::compile(spec)?.spirv()?;
        // Scoped on its own: wgpu hands back a pipeline even when it refused
        // to build it, and a refused one must not be cached for later runs.
        let pipeline = self.scoped(|| {
            let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("welch_peaks"),
                source: wgpu::ShaderSource::SpirV(words.into()),
            });
            Ok(self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            }))
        })?;
        self.pipelines.lock().expect("not poisoned").insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// `work` with wgpu's errors captured. wgpu hands a validation,
    /// internal or out-of-memory error to its uncaptured-error handler,
    /// which panics; in these scopes such an error is `work`'s error
    /// instead. Each scope keeps its first error; an out-of-memory or
    /// internal error is the cause of the validation errors that follow
    /// from the invalid object it left, so it is the one reported.
    fn scoped<T>(&self, work: impl FnOnce() -> Result<T, RuntimeError>) -> Result<T, RuntimeError> {
        let filters = [wgpu::ErrorFilter::OutOfMemory, wgpu::ErrorFilter::Internal, wgpu::ErrorFilter::Validation];
        let scopes = filters.map(|filter| self.device.push_error_scope(filter));
        let result = work();
        // Popped innermost first, as wgpu requires; reported outermost first.
        let captured: Vec<Option<wgpu::Error>> = scopes.into_iter().rev().map(|scope| pollster::block_on(scope.pop())).collect();
        match captured.into_iter().rev().flatten().next() {
            Some(e) => Err(device_error(format!("wgpu refused the kernel on {}: {}", self.adapter, wgpu_error_text(&e)))),
            None => result,
        }
    }

    /// A buffer holding `bytes`. Not `create_buffer_init`, which maps the
    /// new buffer and panics when it could not be created; a write through
    /// the queue reports to the error scopes instead.
    fn upload(&self, label: &str, usage: wgpu::BufferUsages, bytes: &[u8]) -> wgpu::Buffer {
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.len() as u64,
            usage: usage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.queue.write_buffer(&buffer, 0, bytes);
        buffer
    }

    /// A bind group for `pipeline` with the given (binding, buffer) pairs.
    fn bind(&self, pipeline: &wgpu::ComputePipeline, buffers: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> =
            buffers.iter().map(|(binding, buffer)| wgpu::BindGroupEntry { binding: *binding, resource: buffer.as_entire_binding() }).collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &pipeline.get_bind_group_layout(0), entries: &entries })
    }
}

impl FusedKernel for WgpuKernels {
    fn name(&self) -> String {
        format!("wgpu ({})", self.adapter)
    }

    fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        // The plan keeps the kernels within the adapter's limits; anything
        // it missed is this run's error, not a crash.
        self.scoped(|| self.run_unscoped(attrs, input, window))
    }
}


/// Workgroups the adapter runs at once, for split plans. wgpu tells no
/// core count: a CPU adapter (lavapipe) runs workgroups on a thread per
/// core, a few each so that uneven chunks balance; a GPU gets the plan's
/// assumption.
fn parallelism_of(info: &wgpu::AdapterInfo) -> u64 {
    match info.device_type {
        wgpu::DeviceType::Cpu => 4 * std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
        _ => DeviceLimits::assumed(Target::Wgpu).parallelism,
    }
}

/// wgpu's error on one line: its description (`Validation Error`,
/// `Caused by:`, the call and the reason) without the line breaks.
fn wgpu_error_text(e: &wgpu::Error) -> String {
    let description = match e {
        wgpu::Error::Validation { description, .. } | wgpu::Error::Internal { description, .. } => description.clone(),
        wgpu::Error::OutOfMemory { source } => format!("{e}: {source}"),
    };
    let lines: Vec<&str> = description.lines().map(str::trim).filter(|l| !l.is_empty() && *l != "Caused by:").collect();
    lines.join(": ")
}

impl WgpuKernels {
    fn run_unscoped(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        let g = geometry(attrs, input.view(), window.map(Tensor::view))?;
        if g.batch == 0 {
            // Nothing to compute, and wgpu has no zero-size bindings.
            return Ok(Tensor::zeros(output_shape(attrs, &g)));
        }
        // The plan checks the input, output and spectra against this adapter's binding limits.
        let spec = lower::specialize_for(attrs, &input.shape, Target::Wgpu, &self.limits)?;
        let ones = [1.0f32];
        let window = window.map_or(&ones[..], |w| &w.data[..]);
        RuntimeError::check_buffer("wgpu", "input", input.data.len(), spec.kernel.input_len)?;
        RuntimeError::check_buffer("wgpu", "window", window.len(), spec.kernel.window_len)?;
        let storage = |label, data: &[f32]| self.upload(label, wgpu::BufferUsages::STORAGE, bytemuck::cast_slice(data));
        let segs = storage("segs", &input.data);
        let window = storage("window", window);
        let out_bytes = 4 * spec.kernel.output_len;
        let peaks = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("peaks"),
            size: out_bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: out_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("welch_peaks") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("welch_peaks"), timestamp_writes: None });
            let mut dispatch = |pipeline: &wgpu::ComputePipeline, group: &wgpu::BindGroup, groups: u64| {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, group, &[]);
                let (x, y) = lower::grid(groups);
                pass.dispatch_workgroups(x, y, 1);
            };
            let k = &spec.kernel;
            let threads = k.threads as u64;
            // The split plans' partial spectra, written by their first pass.
            let partials = k.plan.is_split().then(|| {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("partials"),
                    size: 4 * k.partials_len,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                })
            });
            match (k.fft, &partials) {
                (FftPlan::OnePass, None) => {
                    let pipeline = self.pipeline(&spec, wgsl::ENTRY)?;
                    let group = self.bind(&pipeline, &[(0, &segs), (1, &window), (2, &peaks)]);
                    dispatch(&pipeline, &group, k.groups);
                }
                (FftPlan::OnePass, Some(partials)) => {
                    let pipeline = self.pipeline(&spec, wgsl::SPLIT_ENTRY)?;
                    let group = self.bind(&pipeline, &[(0, &segs), (1, &window), (wgsl::PARTIALS_BINDING, partials)]);
                    dispatch(&pipeline, &group, k.groups * k.chunks);
                }
                (FftPlan::MultiPass, _) => {
                    let spectra = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("spectra"),
                        size: 8 * k.spectra_len,
                        usage: wgpu::BufferUsages::STORAGE,
                        mapped_at_creation: false,
                    });
                    let [load, stage, peaks_of] = wgsl::MULTIPASS_ENTRIES;
                    let pipeline = self.pipeline(&spec, load)?;
                    let group = self.bind(&pipeline, &[(0, &segs), (1, &window), (3, &spectra)]);
                    dispatch(&pipeline, &group, k.spectra_len.div_ceil(threads));
                    // One module for every stage: the stage index is a uniform, one small buffer per stage.
                    let pipeline = self.pipeline(&spec, stage)?;
                    for s in 0..k.log2n {
                        let index = self.upload("stage_index", wgpu::BufferUsages::UNIFORM, bytemuck::cast_slice(&[s, 0, 0, 0]));
                        let group = self.bind(&pipeline, &[(3, &spectra), (wgsl::STAGE_BINDING, &index)]);
                        dispatch(&pipeline, &group, (k.spectra_len / 2).div_ceil(threads));
                    }
                    match &partials {
                        None => {
                            let pipeline = self.pipeline(&spec, peaks_of)?;
                            let group = self.bind(&pipeline, &[(2, &peaks), (3, &spectra)]);
                            dispatch(&pipeline, &group, k.groups);
                        }
                        Some(partials) => {
                            let pipeline = self.pipeline(&spec, wgsl::SPLIT_MULTIPASS_ENTRY)?;
                            let group = self.bind(&pipeline, &[(3, &spectra), (wgsl::PARTIALS_BINDING, partials)]);
                            dispatch(&pipeline, &group, k.groups * k.chunks);
                        }
                    }
                }
            }
            if let Some(partials) = &partials {
                let pipeline = self.pipeline(&spec, wgsl::PEAKS_OF_PARTIALS)?;
                let group = self.bind(&pipeline, &[(wgsl::PARTIALS_BINDING, partials), (2, &peaks)]);
                dispatch(&pipeline, &group, k.groups);
            }
        }
        encoder.copy_buffer_to_buffer(&peaks, 0, &readback, 0, out_bytes);
        self.queue.submit([encoder.finish()]);
        let slice = readback.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| device_error(e.to_string()))?;
        rx.recv().map_err(|e| device_error(e.to_string()))?.map_err(|e| device_error(format!("reading the result back: {e}")))?;
        let view = slice.get_mapped_range().map_err(|e| device_error(e.to_string()))?;
        let data: Vec<f32> = bytemuck::cast_slice(&view).to_vec();
        drop(view);
        readback.unmap();
        Ok(Tensor::new(output_shape(attrs, &g), data))
    }
}

impl super::calibrate::CalibrationDevice for WgpuKernels {
    fn device_limits(&self) -> DeviceLimits {
        self.limits
    }

    /// A CPU adapter runs a workgroup per thread; a GPU as many as the plan
    /// aims for (wgpu tells no core count).
    fn workers(&self) -> u64 {
        match self.cpu_adapter {
            true => std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
            false => self.limits.parallelism,
        }
    }

    /// Median ns of writing `bytes` into a device buffer, reading them
    /// back through a mapped buffer, and copying them on the device.
    fn transfer_ns(&self, bytes: usize) -> Result<Option<(f64, f64, f64)>, RuntimeError> {
        // Written, not zeroed: an untouched zeroed allocation reads as one
        // shared page of zeros, and uploads faster than any real input.
        let data = vec![0x3fu8; bytes];
        let size = bytes as u64;
        let buffer = |label, usage| self.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: false });
        let wait = || self.device.poll(wgpu::PollType::wait_indefinitely()).map(|_| ()).map_err(|e| device_error(e.to_string()));
        self.scoped(|| {
            let a = buffer("a", wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC);
            let b = buffer("b", wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC);
            let host = buffer("host", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
            let median = |f: &mut dyn FnMut() -> Result<(), RuntimeError>| super::calibrate::median_ns(3, f);
            let copy = |from: &wgpu::Buffer, to: &wgpu::Buffer| {
                let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                encoder.copy_buffer_to_buffer(from, 0, to, 0, size);
                self.queue.submit([encoder.finish()]);
            };
            let upload = median(&mut || {
                self.queue.write_buffer(&a, 0, &data);
                self.queue.submit([]);
                wait()
            })?;
            let readback = median(&mut || {
                copy(&a, &host);
                let slice = host.slice(..);
                slice.map_async(wgpu::MapMode::Read, |_| {});
                wait()?;
                drop(slice.get_mapped_range().map_err(|e| device_error(e.to_string()))?);
                host.unmap();
                Ok(())
            })?;
            let on_device = median(&mut || {
                copy(&a, &b);
                wait()
            })?;
            Ok(Some((upload, readback, on_device)))
        })
    }
}
