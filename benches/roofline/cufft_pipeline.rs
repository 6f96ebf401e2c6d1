//! The pipeline a CUDA user would write instead of the fused kernel:
//! cuFFT's batched real-to-complex transform of every segment (its spectra
//! written to device memory), then one kernel that sums each entry's power
//! over its segments, weighs it, and takes the top-k by block-wide argmax
//! rounds. Timed on the same resident input, and its peaks compared with
//! the fused kernel's.

use cudarc::cufft::{CudaFft, sys as cufft_sys};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use rlx_opt::runtime::RuntimeError;
use rlx_opt::runtime::cuda_kernel::CudaKernels;

/// The epilogue: one 256-thread block per batch entry, its power spectrum
/// in shared memory; each round the block's largest bin (ties to the lower
/// bin) is written and knocked out. Interleaved (bin, power) peaks, as the
/// fused op's RLX form writes them.
const EPILOGUE: &str = r#"
#define NEG_INF __int_as_float(0xff800000)
extern "C" __global__ void psd_topk(const float2* __restrict__ spectra, float* __restrict__ peaks,
                                    unsigned int segments, unsigned int bins, unsigned int k, float scale) {
    extern __shared__ float psd[];
    __shared__ float warp_power[32];
    __shared__ int warp_bin[32];
    const unsigned long long b = blockIdx.x + (unsigned long long)blockIdx.y * gridDim.x;
    const float2* entry = spectra + b * segments * bins;
    for (unsigned int j = threadIdx.x; j < bins; j += blockDim.x) {
        float s = 0.0f;
        for (unsigned int seg = 0; seg < segments; seg++) {
            const float2 c = entry[(unsigned long long)seg * bins + j];
            s += c.x * c.x + c.y * c.y;
        }
        psd[j] = s * ((j != 0 && j != bins - 1) ? 2.0f * scale : scale);
    }
    __syncthreads();
    for (unsigned int r = 0; r < k; r++) {
        float p = NEG_INF;
        int bin = -1;
        for (unsigned int j = threadIdx.x; j < bins; j += blockDim.x) {
            if (psd[j] > p) { p = psd[j]; bin = (int)j; }
        }
        for (int offset = 16; offset > 0; offset >>= 1) {
            const float q = __shfl_xor_sync(0xffffffffu, p, offset);
            const int i = __shfl_xor_sync(0xffffffffu, bin, offset);
            if (q > p || (q == p && i >= 0 && (bin < 0 || i < bin))) { p = q; bin = i; }
        }
        if ((threadIdx.x & 31u) == 0u) { warp_power[threadIdx.x / 32] = p; warp_bin[threadIdx.x / 32] = bin; }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (unsigned int w = 1; w < blockDim.x / 32; w++) {
                const float q = warp_power[w];
                const int i = warp_bin[w];
                if (q > p || (q == p && i >= 0 && (bin < 0 || i < bin))) { p = q; bin = i; }
            }
            peaks[b * 2ull * k + 2 * r] = (float)bin;
            peaks[b * 2ull * k + 2 * r + 1] = p;
            if (bin >= 0) psd[bin] = NEG_INF;
        }
        __syncthreads();
    }
}
"#;

const THREADS: u32 = 256;

/// The shared memory a launch gets without asking for more.
const DEFAULT_SHARED_BYTES: usize = 48 * 1024;

/// The epilogue's static shared memory: 32 warps' power and bin.
const STATIC_SHARED_BYTES: usize = 32 * 4 * 2;

/// The pipeline for one shape: its cuFFT plan, spectra and peaks on the device.
pub struct CufftPipeline {
    fft: CudaFft,
    epilogue: CudaFunction,
    spectra: CudaSlice<cufft_sys::float2>,
    peaks: CudaSlice<f32>,
    batch: u32,
    segments: u32,
    bins: u32,
    k: u32,
}

fn failed(what: &str, e: impl std::fmt::Debug) -> RuntimeError {
    RuntimeError::Device { backend: "cuda", message: format!("the cuFFT pipeline: {what}: {e:?}") }
}

/// Whether cuFFT can be loaded (libcufft.so on LD_LIBRARY_PATH).
pub fn available() -> bool {
    // SAFETY: only probes whether the shared library can be opened.
    unsafe { cufft_sys::is_culib_present() }
}

/// The epilogue kernel, compiled for the device once.
pub fn epilogue(cuda: &CudaKernels) -> Result<CudaFunction, RuntimeError> {
    let ptx = cudarc::nvrtc::compile_ptx(EPILOGUE).map_err(|e| failed("compiling the epilogue", e))?;
    let module = cuda.context().load_module(ptx).map_err(|e| failed("loading the epilogue", e))?;
    module.load_function("psd_topk").map_err(|e| failed("the epilogue's entry point", e))
}

impl CufftPipeline {
    /// A plan of `batch × segments` transforms of `n_fft` real samples, rows
    /// of the input one after another.
    pub fn new(cuda: &CudaKernels, epilogue: &CudaFunction, batch: usize, segments: usize, n_fft: usize, k: usize) -> Result<Self, RuntimeError> {
        let bins = n_fft / 2 + 1;
        // The epilogue keeps an entry's powers in shared memory: past the
        // 48 KiB a launch gets by default (n_fft 65536 takes 128 KiB), the
        // function must ask for more, up to what the device lets a block
        // opt in to.
        let shared = bins * 4;
        // The block's static arrays (warp_power, warp_bin) count too.
        if shared + STATIC_SHARED_BYTES > DEFAULT_SHARED_BYTES {
            let most = cuda.context().attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).map_err(|e| failed("the device's shared memory", e))?;
            if shared + STATIC_SHARED_BYTES > most as usize {
                return Err(failed("the epilogue", format!("{bins} bins' powers take {shared} bytes of shared memory, over the {most} a block may have")));
            }
            epilogue
                .set_attribute(cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)
                .map_err(|e| failed("the epilogue's shared memory", e))?;
        }
        let rows = i32::try_from(batch * segments).map_err(|e| failed("rows", e))?;
        let stream = cuda.stream().clone();
        let fft = CudaFft::plan_many(&[n_fft as i32], None, 1, n_fft as i32, None, 1, bins as i32, cufft_sys::cufftType::CUFFT_R2C, rows, stream.clone())
            .map_err(|e| failed("planning", e))?;
        let spectra = stream.alloc_zeros::<cufft_sys::float2>(batch * segments * bins).map_err(|e| failed("spectra", e))?;
        let peaks = stream.alloc_zeros::<f32>(batch * 2 * k).map_err(|e| failed("peaks", e))?;
        let u = |v: usize| v as u32;
        Ok(CufftPipeline { fft, epilogue: epilogue.clone(), spectra, peaks, batch: u(batch), segments: u(segments), bins: u(bins), k: u(k) })
    }

    /// Enqueue one run on `input` (rows of n_fft samples, resident).
    pub fn run(&mut self, cuda: &CudaKernels, input: &CudaSlice<f32>) -> Result<(), RuntimeError> {
        self.fft.exec_r2c(input, &mut self.spectra).map_err(|e| failed("the transform", e))?;
        // The op's mean over segments (RLX's power scale 1), |X|² per bin.
        let scale = 1.0f32 / self.segments as f32;
        let (x, y) = rlx_opt::lower::grid(self.batch as u64);
        let config = LaunchConfig { grid_dim: (x, y, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: self.bins * 4 };
        let mut builder = cuda.stream().launch_builder(&self.epilogue);
        builder.arg(&self.spectra).arg(&mut self.peaks).arg(&self.segments).arg(&self.bins).arg(&self.k).arg(&scale);
        // SAFETY: the spectra hold batch × segments × bins values and the
        // peaks batch × 2k, as the kernel indexes them.
        unsafe { builder.launch(config) }.map(drop).map_err(|e| failed("the epilogue", e))
    }

    pub fn peaks(&self, cuda: &CudaKernels) -> Result<Vec<f32>, RuntimeError> {
        cuda.stream().clone_dtoh(&self.peaks).map_err(|e| failed("reading the peaks", e))
    }
}
