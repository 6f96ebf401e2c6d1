//! The CUDA emulator itself (`tests/cuda_emulation`), on small kernels
//! whose right answers are known: shuffles and warp reductions give what
//! CUDA defines; a read of another warp's shared-memory writes with no
//! block barrier between them sees the old value (so a kernel missing that
//! barrier fails the plan tests); threads stuck at barriers that can never
//! release end the run as a deadlock instead of hanging it.

mod common;
#[path = "cuda_emulation/run.rs"]
mod cuda_emulation;

use cuda_emulation::{Buffer, Call, Emulator};

fn emulator(what: &str) -> Option<Emulator> {
    match cuda_emulation::compiler() {
        Ok(gxx) => Some(Emulator::new(gxx, what)),
        Err(cuda_emulation::NoCompiler(reason)) => {
            common::skip(what, &reason, true);
            None
        }
    }
}

/// One block of `threads` running `kernel` (an `extern "C"` function of
/// `float* out`), `len` output values.
fn run(e: &mut Emulator, arch: u32, kernel: &str, threads: u32, len: u64) -> Result<Vec<f32>, String> {
    let buffers = [Buffer { name: "out", element: "float", len, input: None }];
    let calls = [Call { entry: "k".into(), grid: (1, 1), threads, args: vec!["out".into()] }];
    e.run(kernel, arch, &buffers, &calls, "out")
}

#[test]
fn shuffles_and_warp_reductions_are_cudas() {
    let Some(mut e) = emulator("shuffles_and_warp_reductions_are_cudas") else { return };
    // Per lane: its xor-1 neighbour's value, the warp's sum by a butterfly
    // of shuffles, the warp's largest value by __reduce_max_sync, and the
    // value of lane 7·l + 3 mod 32 by __shfl_sync.
    let kernel = r#"
extern "C" __global__ void k(float* out) {
    const unsigned int lane = threadIdx.x % 32u, warp = threadIdx.x / 32u;
    const float v = (float)(threadIdx.x * 3u % 7u);
    float sum = v;
    for (unsigned int offset = 16u; offset > 0u; offset >>= 1u) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    out[4u * threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, 1u);
    out[4u * threadIdx.x + 1u] = sum;
    out[4u * threadIdx.x + 2u] = (float)__reduce_max_sync(0xffffffffu, threadIdx.x * 5u % 11u + warp);
    out[4u * threadIdx.x + 3u] = __shfl_sync(0xffffffffu, v, (lane * 7u + 3u) % 32u);
}
"#;
    let got = run(&mut e, 800, kernel, 64, 4 * 64).unwrap();
    let v = |t: u32| (t * 3 % 7) as f32;
    for t in 0..64u32 {
        let warp = t / 32;
        let lanes = 32 * warp..32 * warp + 32;
        assert_eq!(got[4 * t as usize], v(t ^ 1), "thread {t}: neighbour");
        assert_eq!(got[4 * t as usize + 1], lanes.clone().map(v).sum::<f32>(), "thread {t}: sum");
        assert_eq!(got[4 * t as usize + 2], lanes.map(|l| l * 5 % 11 + warp).max().unwrap() as f32, "thread {t}: max");
        assert_eq!(got[4 * t as usize + 3], v(32 * warp + (t % 32 * 7 + 3) % 32), "thread {t}: lane 7·l + 3");
    }
}

#[test]
fn a_read_without_the_block_barrier_sees_the_old_value() {
    let Some(mut e) = emulator("a_read_without_the_block_barrier_sees_the_old_value") else { return };
    // Warp 1 writes a shared value that warp 0 reads, with and without a
    // __syncthreads between them.
    let kernel = |barrier: &str| {
        format!(
            r#"
extern "C" __global__ void k(float* out) {{
    __shared__ float cell;
    if (threadIdx.x == 0u) cell = 1.0f;
    __syncthreads();
    if (threadIdx.x == 32u) cell = 2.0f;
    {barrier}
    if (threadIdx.x == 0u) out[0] = cell;
}}
"#
        )
    };
    assert_eq!(run(&mut e, 800, &kernel("__syncthreads();"), 64, 1).unwrap(), [2.0]);
    assert_eq!(run(&mut e, 800, &kernel(""), 64, 1).unwrap(), [1.0], "the read ran before the write it needed");
}

#[test]
fn barriers_that_cannot_release_are_a_deadlock() {
    let Some(mut e) = emulator("barriers_that_cannot_release_are_a_deadlock") else { return };
    // Half of a warp at __syncwarp, the other half at __syncthreads.
    let kernel = r#"
extern "C" __global__ void k(float* out) {
    if (threadIdx.x < 16u) __syncwarp(); else __syncthreads();
    out[threadIdx.x] = 1.0f;
}
"#;
    let err = run(&mut e, 800, kernel, 32, 32).unwrap_err();
    assert!(err.contains("deadlock in block (0, 0)"), "{err}");
    // Threads that return drop out: the rest still meet at the barrier.
    let exits = r#"
extern "C" __global__ void k(float* out) {
    if (threadIdx.x >= 40u) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}
"#;
    assert_eq!(run(&mut e, 700, exits, 64, 40).unwrap(), vec![1.0; 40]);
}
