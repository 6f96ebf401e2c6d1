//! The fused op on an NVIDIA GPU: the CUDA kernel compiled by NVRTC for the
//! device's architecture and launched through cudarc, one block per batch entry.

use super::tensor::Tensor;
use crate::fused::WelchPeaksAttrs;
use crate::lower::{self, cuda};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub struct CudaKernels {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// `sm_XY` of device 0.
    pub arch: &'static str,
    pub device: String,
    functions: Mutex<HashMap<(String, &'static str), CudaFunction>>,
}

impl CudaKernels {
    /// Device 0, or why it cannot be used.
    pub fn new() -> Result<Self, String> {
        // SAFETY: only probes whether the shared libraries can be opened.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("--target=cuda: no CUDA driver found (libcuda.so)".into());
        }
        if !cuda::nvrtc_available() {
            return Err("--target=cuda: NVRTC not found (libnvrtc.so.12 on LD_LIBRARY_PATH)".into());
        }
        let ctx = CudaContext::new(0).map_err(|e| format!("--target=cuda: no usable GPU: {e:?}"))?;
        let device = ctx.name().map_err(|e| format!("--target=cuda: {e:?}"))?;
        let (major, minor) = ctx.compute_capability().map_err(|e| format!("--target=cuda: {e:?}"))?;
        let arch: &'static str = Box::leak(format!("sm_{major}{minor}").into_boxed_str());
        let stream = ctx.default_stream();
        Ok(CudaKernels { ctx, stream, arch, device, functions: Mutex::new(HashMap::new()) })
    }

    /// Entry point `name` of the specialisation's module, compiled once.
    fn function(&self, spec: &lower::Specialization, name: &'static str) -> Result<CudaFunction, String> {
        let key = (format!("{:?}", spec.constants), name);
        if let Some(f) = self.functions.lock().expect("not poisoned").get(&key) {
            return Ok(f.clone());
        }
        let (_, ptx, _) = cuda::compile(spec, self.arch)?;
        let module = self.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(|e| format!("--target=cuda: loading the kernel: {e:?}"))?;
        let mut functions = self.functions.lock().expect("not poisoned");
        for entry in ["welch_peaks", "load", "stage", "peaks_of"] {
            if let Ok(f) = module.load_function(entry) {
                functions.insert((key.0.clone(), entry), f);
            }
        }
        functions.get(&key).cloned().ok_or_else(|| format!("--target=cuda: the kernel has no entry point `{name}`"))
    }

    /// Median kernel time in ms over `runs` launches on data already on the
    /// device (what a benchmark against other GPU code should compare).
    pub fn time_kernel(&self, attrs: &WelchPeaksAttrs, input: &Tensor, runs: usize) -> Result<f64, String> {
        let spec = lower::specialize(attrs, &input.shape)?;
        if spec.plan != lower::Plan::OnePass {
            return Err("--target=cuda: kernel timing covers the one-pass plan".into());
        }
        let f = self.function(&spec, cuda::ENTRY)?;
        let err = |e: cudarc::driver::DriverError| format!("--target=cuda: {e:?}");
        let segs = self.stream.clone_htod(&input.data).map_err(err)?;
        let window = self.stream.clone_htod(&[1.0f32][..]).map_err(err)?;
        let mut peaks = self.stream.alloc_zeros::<f32>(spec.output_len as usize).map_err(err)?;
        let (x, y) = lower::grid(spec.groups);
        let config = LaunchConfig { grid_dim: (x, y, 1), block_dim: (spec.threads, 1, 1), shared_mem_bytes: 0 };
        let mut times = Vec::with_capacity(runs);
        for i in 0..=runs {
            self.stream.synchronize().map_err(err)?;
            let start = std::time::Instant::now();
            let mut launch = self.stream.launch_builder(&f);
            launch.arg(&segs).arg(&window).arg(&mut peaks);
            // SAFETY: as in `run`.
            unsafe { launch.launch(config) }.map_err(err)?;
            self.stream.synchronize().map_err(err)?;
            if i > 0 {
                times.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    pub fn run(&self, attrs: &WelchPeaksAttrs, input: &Tensor, window: Option<&Tensor>) -> Result<Tensor, String> {
        let spec = lower::specialize(attrs, &input.shape)?;
        let err = |e: cudarc::driver::DriverError| format!("--target=cuda: {e:?}");
        let segs = self.stream.clone_htod(&input.data).map_err(err)?;
        let ones = [1.0f32];
        let window = self.stream.clone_htod(window.map_or(&ones[..], |w| &w.data[..])).map_err(err)?;
        let mut peaks = self.stream.alloc_zeros::<f32>(spec.output_len as usize).map_err(err)?;
        let config = |groups: u64| {
            let (x, y) = lower::grid(groups);
            LaunchConfig { grid_dim: (x, y, 1), block_dim: (spec.threads, 1, 1), shared_mem_bytes: 0 }
        };
        // SAFETY (every launch below): the kernels read and write within the
        // lengths `specialize` derived from these very tensors and buffers.
        match spec.plan {
            lower::Plan::OnePass => {
                let f = self.function(&spec, cuda::ENTRY)?;
                let mut launch = self.stream.launch_builder(&f);
                launch.arg(&segs).arg(&window).arg(&mut peaks);
                unsafe { launch.launch(config(spec.groups)) }.map_err(err)?;
            }
            lower::Plan::MultiPass => {
                let mut spectra = self.stream.alloc_zeros::<f32>(2 * spec.spectra_len as usize).map_err(err)?;
                let threads = spec.threads as u64;
                let load = self.function(&spec, "load")?;
                let mut launch = self.stream.launch_builder(&load);
                launch.arg(&segs).arg(&window).arg(&mut spectra);
                unsafe { launch.launch(config(spec.spectra_len.div_ceil(threads))) }.map_err(err)?;
                let stage = self.function(&spec, "stage")?;
                for s in 0..spec.log2n {
                    let mut launch = self.stream.launch_builder(&stage);
                    launch.arg(&mut spectra).arg(&s);
                    unsafe { launch.launch(config((spec.spectra_len / 2).div_ceil(threads))) }.map_err(err)?;
                }
                let peaks_of = self.function(&spec, "peaks_of")?;
                let mut launch = self.stream.launch_builder(&peaks_of);
                launch.arg(&spectra).arg(&mut peaks);
                unsafe { launch.launch(config(spec.groups)) }.map_err(err)?;
            }
        }
        let data = self.stream.clone_dtoh(&peaks).map_err(err)?;
        let mut shape = super::welch::geometry(attrs, &input.shape).batch_shape;
        shape.push(2 * attrs.k as usize);
        Ok(Tensor::new(shape, data))
    }
}
