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

    fn pipeline(&self, spec: &lower::Specialization) -> Result<wgpu::ComputePipeline, String> {
        let key = format!("{:?}", spec.constants);
        if let Some(p) = self.pipelines.lock().expect("not poisoned").get(&key) {
            return Ok(p.clone());
        }
        if spec.shared_bytes > self.limits.max_compute_workgroup_storage_size as u64 {
            return Err(format!(
                "--target=wgpu: the kernel needs {} bytes of workgroup memory, {} offers {}",
                spec.shared_bytes, self.adapter, self.limits.max_compute_workgroup_storage_size
            ));
        }
        let words = wgsl::compile(spec)?.spirv()?;
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("welch_peaks"),
            source: wgpu::ShaderSource::SpirV(words.into()),
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("welch_peaks"),
            layout: None,
            module: &module,
            entry_point: Some(wgsl::ENTRY),
            compilation_options: Default::default(),
            cache: None,
        });
        self.pipelines.lock().expect("not poisoned").insert(key, pipeline.clone());
        Ok(pipeline)
    }

    pub fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, String> {
        let spec = lower::specialize(attrs, &input.shape)?;
        let max_binding = self.limits.max_storage_buffer_binding_size as u64;
        if 4 * spec.input_len > max_binding {
            return Err(format!("--target=wgpu: the input is {} bytes, {} binds at most {max_binding}", 4 * spec.input_len, self.adapter));
        }
        let pipeline = self.pipeline(&spec)?;
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
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("welch_peaks"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: segs.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: window.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: peaks.as_entire_binding() },
            ],
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("welch_peaks") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("welch_peaks"), timestamp_writes: None });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            let (x, y) = lower::grid(spec.groups);
            pass.dispatch_workgroups(x, y, 1);
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
