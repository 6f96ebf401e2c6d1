//! The fused op on a GPU through wgpu and Vulkan: the WGSL kernel's SPIR-V
//! (written by naga) as a compute pipeline, one workgroup per batch entry.

use super::tensor::Tensor;
use crate::fused::WelchPeaksAttrs;
use crate::lower::{self, wgsl};
use std::collections::HashMap;
use std::sync::Mutex;
use wgpu::util::DeviceExt;

pub struct WgpuKernels {
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// The adapter, as the driver names it (`llvmpipe (LLVM 15.0.6, 256 bits)`, say).
    pub adapter: String,
    limits: wgpu::Limits,
    /// Pipelines by specialisation, built once.
    pipelines: Mutex<HashMap<String, wgpu::ComputePipeline>>,
}

impl WgpuKernels {
    /// The first Vulkan adapter, or why there is none.
    pub fn new() -> Result<Self, String> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let options = wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() };
        let adapter = pollster::block_on(instance.request_adapter(&options))
            .map_err(|e| format!("--target=wgpu: no Vulkan adapter found ({e}); install a Vulkan driver (mesa-vulkan-drivers for lavapipe)"))?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let descriptor = wgpu::DeviceDescriptor { label: Some("rlx-run"), required_limits: limits.clone(), ..Default::default() };
        let (device, queue) =
            pollster::block_on(adapter.request_device(&descriptor)).map_err(|e| format!("--target=wgpu: cannot open {}: {e}", info.name))?;
        Ok(WgpuKernels { device, queue, adapter: info.name, limits, pipelines: Mutex::new(HashMap::new()) })
    }

    /// The pipeline of `entry` in the module specialised for radix-2 stage `stage`.
    fn pipeline(&self, spec: &lower::Specialization, stage: u32, entry: &str) -> Result<wgpu::ComputePipeline, String> {
        let key = format!("{:?}/{stage}/{entry}", spec.constants);
        if let Some(p) = self.pipelines.lock().expect("not poisoned").get(&key) {
            return Ok(p.clone());
        }
        if spec.shared_bytes > self.limits.max_compute_workgroup_storage_size as u64 {
            return Err(format!(
                "--target=wgpu: the kernel needs {} bytes of workgroup memory, {} offers {}",
                spec.shared_bytes, self.adapter, self.limits.max_compute_workgroup_storage_size
            ));
        }
        let words = wgsl::compile_stage(spec, stage)?.spirv()?;
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("welch_peaks"),
            source: wgpu::ShaderSource::SpirV(words.into()),
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        self.pipelines.lock().expect("not poisoned").insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// A bind group for `pipeline` with the given (binding, buffer) pairs.
    fn bind(&self, pipeline: &wgpu::ComputePipeline, buffers: &[(u32, &wgpu::Buffer)]) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry> =
            buffers.iter().map(|(binding, buffer)| wgpu::BindGroupEntry { binding: *binding, resource: buffer.as_entire_binding() }).collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &pipeline.get_bind_group_layout(0), entries: &entries })
    }

    pub fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, String> {
        let spec = lower::specialize(attrs, &input.shape)?;
        let max_binding = self.limits.max_storage_buffer_binding_size;
        if 4 * spec.input_len > max_binding {
            return Err(format!("--target=wgpu: the input is {} bytes, {} binds at most {max_binding}", 4 * spec.input_len, self.adapter));
        }
        if 8 * spec.spectra_len > max_binding {
            return Err(format!("--target=wgpu: the multi-pass spectra take {} bytes, {} binds at most {max_binding}", 8 * spec.spectra_len, self.adapter));
        }
        let storage = |label, data: &[f32]| {
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(data),
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        let segs = storage("segs", &input.data);
        let ones = [1.0f32];
        let window = storage("window", window.map_or(&ones[..], |w| &w.data[..]));
        let out_bytes = 4 * spec.output_len;
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
            match spec.plan {
                lower::Plan::OnePass => {
                    let pipeline = self.pipeline(&spec, 0, wgsl::ENTRY)?;
                    let group = self.bind(&pipeline, &[(0, &segs), (1, &window), (2, &peaks)]);
                    dispatch(&pipeline, &group, spec.groups);
                }
                lower::Plan::MultiPass => {
                    let spectra = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("spectra"),
                        size: 8 * spec.spectra_len,
                        usage: wgpu::BufferUsages::STORAGE,
                        mapped_at_creation: false,
                    });
                    let threads = spec.threads as u64;
                    let [load, stage, peaks_of] = wgsl::MULTIPASS_ENTRIES;
                    let pipeline = self.pipeline(&spec, 0, load)?;
                    let group = self.bind(&pipeline, &[(0, &segs), (1, &window), (3, &spectra)]);
                    dispatch(&pipeline, &group, spec.spectra_len.div_ceil(threads));
                    for s in 0..spec.log2n {
                        let pipeline = self.pipeline(&spec, s, stage)?;
                        let group = self.bind(&pipeline, &[(3, &spectra)]);
                        dispatch(&pipeline, &group, (spec.spectra_len / 2).div_ceil(threads));
                    }
                    let pipeline = self.pipeline(&spec, 0, peaks_of)?;
                    let group = self.bind(&pipeline, &[(2, &peaks), (3, &spectra)]);
                    dispatch(&pipeline, &group, spec.groups);
                }
            }
        }
        encoder.copy_buffer_to_buffer(&peaks, 0, &readback, 0, out_bytes);
        self.queue.submit([encoder.finish()]);
        let slice = readback.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| format!("--target=wgpu: {e}"))?;
        rx.recv().map_err(|e| e.to_string())?.map_err(|e| format!("--target=wgpu: reading the result back: {e}"))?;
        let view = slice.get_mapped_range().map_err(|e| format!("--target=wgpu: {e}"))?;
        let data: Vec<f32> = bytemuck::cast_slice(&view).to_vec();
        drop(view);
        readback.unmap();
        let mut shape = super::welch::geometry(attrs, &input.shape).batch_shape;
        shape.push(2 * attrs.k as usize);
        Ok(Tensor::new(shape, data))
    }
}
