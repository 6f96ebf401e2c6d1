//! The fused op on a GPU through wgpu and Vulkan: the WGSL kernel's SPIR-V
//! (written by naga) as compute pipelines, dispatched as the op's plan says.

use super::tensor::Tensor;
use super::welch::{geometry, output_shape};
use super::{FusedKernel, RuntimeError};
use crate::analysis::Target;
use crate::analysis::loop_budget::LAVAPIPE_LOOP_ITERATIONS;
use crate::analysis::plan::DeviceLimits;
use crate::fused::{LogMelAttrs, WelchPeaksAttrs};
use crate::lower::{self, KernelBuffer, KernelEntry, Launch, log_mel, wgsl};
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
    /// The Welch-peaks top-k takes subgroup operations ([`lower::Specialization::subgroups`]).
    subgroups: bool,
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
        let subgroups = subgroups_pay(&adapter, &info);
        let required_features = if subgroups { wgpu::Features::SUBGROUP } else { wgpu::Features::empty() };
        let descriptor = wgpu::DeviceDescriptor { label: Some("rlx-run"), required_features, required_limits: limits.clone(), ..Default::default() };
        let (device, queue) = pollster::block_on(adapter.request_device(&descriptor)).map_err(|e| device_error(format!("cannot open {}: {e}", info.name)))?;
        let limits = DeviceLimits {
            max_binding_bytes: limits.max_storage_buffer_binding_size.min(limits.max_buffer_size),
            max_workgroup_bytes: limits.max_compute_workgroup_storage_size as u64,
            parallelism: parallelism_of(&info),
            max_loop_iterations: if info.device_type == wgpu::DeviceType::Cpu { LAVAPIPE_LOOP_ITERATIONS } else { u64::MAX },
            four_step: true,
            log_mel_warps: false,
            packed_segment: false,
        };
        let cpu_adapter = info.device_type == wgpu::DeviceType::Cpu;
        Ok(WgpuKernels { device, queue, adapter: info.name, limits, cpu_adapter, subgroups, pipelines: Mutex::new(HashMap::new()) })
    }

    /// Whether the Welch-peaks kernels take subgroup operations here.
    pub fn subgroups(&self) -> bool {
        self.subgroups
    }

    /// The same adapter, its Welch-peaks kernels in workgroup memory alone
    /// (the form for adapters without subgroups): how the tests run both
    /// forms on one adapter, and the bench compares them.
    pub fn without_subgroups(mut self) -> Self {
        self.subgroups = false;
        self
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
    fn pipeline(&self, spec: &lower::Specialization, entry: KernelEntry) -> Result<wgpu::ComputePipeline, RuntimeError> {
        let key = format!("{:?} subgroups {} table {}/{entry}", spec.constants, spec.subgroups, spec.kernel.twiddle_table);
        if let Some(p) = self.pipelines.lock().expect("not poisoned").get(&key) {
            return Ok(p.clone());
        }
        let words = wgsl::compile(spec)?.spirv()?;
        self.pipeline_of(key, &words, entry.name())
    }

    /// The pipeline of `entry` in a log-mel specialisation's module.
    fn log_mel_pipeline(&self, spec: &log_mel::LogMelSpec, entry: log_mel::LogMelEntry) -> Result<wgpu::ComputePipeline, RuntimeError> {
        let key = format!("log_mel {:?} table {}/{}", spec.constants, spec.plan.twiddle_table, entry.name());
        if let Some(p) = self.pipelines.lock().expect("not poisoned").get(&key) {
            return Ok(p.clone());
        }
        let words = log_mel::compile_wgsl(spec)?.spirv()?;
        self.pipeline_of(key, &words, entry.name())
    }

    /// A pipeline for `entry` of the SPIR-V module `words`, cached as `key`.
    fn pipeline_of(&self, key: String, words: &[u32], entry: &str) -> Result<wgpu::ComputePipeline, RuntimeError> {
        // Scoped on its own: wgpu hands back a pipeline even when it refused
        // to build it, and a refused one must not be cached for later runs.
        let pipeline = self.scoped(|| {
            let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(entry),
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

    fn run_log_mel(&self, attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        self.scoped(|| self.run_log_mel_unscoped(attrs, input, filters, window))
    }
}

impl WgpuKernels {
    /// The log-mel op's launches ([`log_mel::launches`]) in one compute
    /// pass: the filters' bands, then a workgroup per frame.
    fn run_log_mel_unscoped(&self, attrs: &LogMelAttrs, input: &Tensor, filters: &Tensor, window: Option<&Tensor>) -> Result<Tensor, RuntimeError> {
        let g = crate::runtime::log_mel::geometry(attrs, input.view(), filters.view(), window.map(Tensor::view))?;
        if g.rows == 0 {
            // Nothing to compute, and wgpu has no zero-size bindings.
            return Ok(Tensor::zeros(g.out_shape));
        }
        let spec = log_mel::specialize(attrs, &input.shape, Target::Wgpu, &self.limits)?;
        let ones = [1.0f32];
        let window = window.map_or(&ones[..], |w| &w.data[..]);
        RuntimeError::check_buffer("wgpu", "input", input.data.len(), spec.input_len)?;
        RuntimeError::check_buffer("wgpu", "window", window.len(), spec.window_len)?;
        RuntimeError::check_buffer("wgpu", "filters", filters.data.len(), spec.filters_len)?;
        let storage = |label, data: &[f32]| self.upload(label, wgpu::BufferUsages::STORAGE, bytemuck::cast_slice(data));
        let scratch = |buffer: log_mel::LogMelBuffer, usage| {
            self.device.create_buffer(&wgpu::BufferDescriptor { label: Some(buffer.name()), size: 4 * buffer.len(&spec), usage: wgpu::BufferUsages::STORAGE | usage, mapped_at_creation: false })
        };
        use log_mel::LogMelBuffer as B;
        let buffers = [
            (B::Frames, storage("frames", &input.data)),
            (B::Window, storage("window", window)),
            (B::Filters, storage("filters", &filters.data)),
            (B::Bands, scratch(B::Bands, wgpu::BufferUsages::empty())),
            (B::Mels, scratch(B::Mels, wgpu::BufferUsages::COPY_SRC)),
        ];
        let get = |role: B| buffers.iter().find(|(r, _)| *r == role).map(|(_, b)| b).ok_or_else(|| device_error(format!("no {} buffer", role.name())));
        let out_bytes = 4 * spec.output_len;
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: out_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("log_mel") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("log_mel"), timestamp_writes: None });
            for launch in log_mel::launches(&spec) {
                let pipeline = self.log_mel_pipeline(&spec, launch.entry)?;
                let mut bound = Vec::with_capacity(launch.entry.buffers().len());
                for buffer in launch.entry.buffers() {
                    bound.push((buffer.binding(), get(*buffer)?));
                }
                let group = self.bind(&pipeline, &bound);
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &group, &[]);
                let (x, y) = launch.grid();
                pass.dispatch_workgroups(x, y, 1);
            }
        }
        encoder.copy_buffer_to_buffer(get(B::Mels)?, 0, &readback, 0, out_bytes);
        self.queue.submit([encoder.finish()]);
        let data = self.read_back(&readback)?;
        Ok(Tensor::new(g.out_shape, data))
    }
}


/// Whether the top-k takes subgroup operations: where the adapter has
/// them, and, on an adapter that caps loop iterations (lavapipe), only
/// with subgroups of at least 8 lanes: each lane then reads at most
/// log2(WG) subgroups' slots a round, within what the loop budget
/// (`analysis::loop_budget`) counts for the tree it replaces.
fn subgroups_pay(adapter: &wgpu::Adapter, info: &wgpu::AdapterInfo) -> bool {
    let capped = info.device_type == wgpu::DeviceType::Cpu;
    adapter.features().contains(wgpu::Features::SUBGROUP) && (!capped || info.subgroup_min_size >= 8)
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
        let spec = lower::Specialization { subgroups: self.subgroups, ..lower::specialize_for(attrs, &input.shape, Target::Wgpu, &self.limits)? };
        let ones = [1.0f32];
        let window = window.map_or(&ones[..], |w| &w.data[..]);
        RuntimeError::check_buffer("wgpu", "input", input.data.len(), spec.kernel.input_len)?;
        RuntimeError::check_buffer("wgpu", "window", window.len(), spec.kernel.window_len)?;
        let launches = lower::launches(&spec.kernel);
        let buffers = self.buffers(&spec, &launches, &input.data, window);
        let out_bytes = 4 * spec.kernel.output_len;
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: out_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("welch_peaks") });
        self.encode(&mut encoder, &spec, &launches, &buffers)?;
        encoder.copy_buffer_to_buffer(buffers.get(KernelBuffer::Peaks)?, 0, &readback, 0, out_bytes);
        self.queue.submit([encoder.finish()]);
        let data = self.read_back(&readback)?;
        Ok(Tensor::new(output_shape(attrs, &g), data))
    }

    /// Every buffer the launches bind: the operands uploaded, the peaks
    /// (copied out afterwards), and the plan's scratch buffers (the
    /// multi-pass spectra, the split plans' partial spectra), sized by the plan.
    fn buffers(&self, spec: &lower::Specialization, launches: &[Launch], input: &[f32], window: &[f32]) -> Buffers {
        let storage = |label, data: &[f32]| self.upload(label, wgpu::BufferUsages::STORAGE, bytemuck::cast_slice(data));
        let mut buffers = Buffers::default();
        for buffer in lower::buffers_of(launches) {
            let made = match buffer {
                KernelBuffer::Segments => storage(buffer.name(), input),
                KernelBuffer::Window => storage(buffer.name(), window),
                KernelBuffer::Peaks | KernelBuffer::Spectra | KernelBuffer::Partials => {
                    let copied_out = if buffer == KernelBuffer::Peaks { wgpu::BufferUsages::COPY_SRC } else { wgpu::BufferUsages::empty() };
                    self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(buffer.name()),
                        size: 4 * buffer.f32_len(&spec.kernel),
                        usage: wgpu::BufferUsages::STORAGE | copied_out,
                        mapped_at_creation: false,
                    })
                }
            };
            buffers.0.push((buffer, made));
        }
        buffers
    }

    /// The launches in one compute pass, in order: each entry point's
    /// pipeline with its buffers bound.
    fn encode(&self, encoder: &mut wgpu::CommandEncoder, spec: &lower::Specialization, launches: &[Launch], buffers: &Buffers) -> Result<(), RuntimeError> {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("welch_peaks"), timestamp_writes: None });
        for launch in launches {
            let pipeline = self.pipeline(spec, launch.entry)?;
            let mut bound = Vec::with_capacity(launch.buffers().len());
            for buffer in launch.buffers() {
                bound.push((buffer.binding(), buffers.get(*buffer)?));
            }
            let group = self.bind(&pipeline, &bound);
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            let (x, y) = launch.grid();
            pass.dispatch_workgroups(x, y, 1);
        }
        Ok(())
    }

    /// The f32 values of a mapped-readable buffer, once the queue is done.
    fn read_back(&self, readback: &wgpu::Buffer) -> Result<Vec<f32>, RuntimeError> {
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
        Ok(data)
    }
}

/// The buffers of one run, by role ([`WgpuKernels::buffers`]).
#[derive(Default)]
struct Buffers(Vec<(KernelBuffer, wgpu::Buffer)>);

impl Buffers {
    fn get(&self, role: KernelBuffer) -> Result<&wgpu::Buffer, RuntimeError> {
        // `buffers` makes every buffer the launches bind: a miss is a bug, reported, not a panic.
        self.0.iter().find(|(r, _)| *r == role).map(|(_, b)| b).ok_or_else(|| device_error(format!("no {} buffer for the plan's launches", role.name())))
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
