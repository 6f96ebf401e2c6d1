// The CUDA kernels' source compiled by a host C++ compiler: each CUDA
// thread of a block is a fiber (ucontext) on one host thread, switched at
// the block's barriers, a warp's __syncwarp, shuffles and reductions; a
// barrier releases once every live thread it binds waits at it (a thread
// that returns drops out, as an exited CUDA thread does), and threads
// waiting at barriers that can never release (part of a warp at one, part
// at another) end the program as a deadlock. Each warp runs as far as it
// can before the next starts, lanes in order: a read of a higher-numbered
// warp's (or lane's) writes with no barrier between sees the old value; a
// missing barrier the other way round goes unseen. Masks are taken as the
// warp's live lanes. Blocks run one after another,
// so `__shared__` variables are plain statics. What it checks: the
// kernels' logic, their indexing and the order of their synchronisation
// (a value read before the barrier that publishes it comes out wrong); not
// NVRTC's code, the hardware's timing or its memory model. Used by
// tests/plans.rs (tests/cuda_emulation/run.rs).
#pragma once
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

struct float2 {
    float x, y;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }
struct uint2 {
    unsigned int x, y;
};
inline uint2 make_uint2(unsigned int x, unsigned int y) { return uint2{x, y}; }
struct uint3 {
    unsigned int x, y, z;
};

inline uint3 threadIdx, blockIdx, gridDim, blockDim;

namespace emulated {
enum class Wait { None, Block, Warp };
struct Fiber {
    ucontext_t context;
    Wait wait = Wait::None;
    bool done = false;
};
inline std::vector<Fiber> fibers;
// One stack per thread of a block, made once and reused by every block
// (not zeroed: a kernel's locals are written before they are read).
constexpr size_t STACK_BYTES = 1 << 17;
inline std::vector<std::unique_ptr<char[]>> stacks;
inline ucontext_t scheduler;
inline unsigned int current;
inline const std::function<void()>* kernel;
// What the lanes of each warp publish for a shuffle or a reduction.
inline std::vector<unsigned long long> slots;

inline void wait(Wait w) {
    fibers[current].wait = w;
    swapcontext(&fibers[current].context, &scheduler);
}

inline void body() {
    (*kernel)();
    fibers[current].done = true;
    swapcontext(&fibers[current].context, &scheduler);
}

inline bool live(unsigned int t) { return t < fibers.size() && !fibers[t].done; }
}  // namespace emulated

inline void __syncthreads() { emulated::wait(emulated::Wait::Block); }
inline void __syncwarp(unsigned int = 0xffffffffu) { emulated::wait(emulated::Wait::Warp); }

namespace emulated {
// Every lane publishes its value, then reads lane `source`'s; the second
// barrier keeps a lane from overwriting a slot still being read.
template <typename T>
inline T exchange(T v, unsigned int source) {
    static_assert(sizeof(T) <= sizeof(unsigned long long));
    const unsigned int base = current & ~31u;
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    slots[current] = bits;
    __syncwarp();
    const unsigned long long other = slots[base + (source & 31u)];
    __syncwarp();
    T out;
    std::memcpy(&out, &other, sizeof(T));
    return out;
}
}  // namespace emulated

template <typename T>
inline T __shfl_xor_sync(unsigned int, T v, unsigned int offset) {
    return emulated::exchange(v, (emulated::current & 31u) ^ offset);
}

template <typename T>
inline T __shfl_sync(unsigned int, T v, unsigned int lane) {
    return emulated::exchange(v, lane);
}

inline unsigned int __reduce_max_sync(unsigned int mask, unsigned int v) {
    const unsigned int t = emulated::current, base = t & ~31u;
    emulated::slots[t] = v;
    __syncwarp();
    unsigned int best = 0;
    for (unsigned int l = 0; l < 32; l++) {
        if (((mask >> l) & 1u) && emulated::live(base + l) && (unsigned int)emulated::slots[base + l] > best) best = (unsigned int)emulated::slots[base + l];
    }
    __syncwarp();
    return best;
}

inline unsigned int __float_as_uint(float f) {
    unsigned int u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float __uint_as_float(unsigned int u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline unsigned int __brev(unsigned int v) {
    unsigned int r = 0;
    for (int i = 0; i < 32; i++) r |= ((v >> i) & 1u) << (31 - i);
    return r;
}
template <typename T>
inline T __ldg(const T* p) { return *p; }
// A kernel's trap ends the launch with an error, as on a GPU: here the
// program, which the test reports as a failed launch.
[[noreturn]] inline void __trap() {
    std::fputs("__trap(): the kernel stopped the launch\n", stderr);
    std::abort();
}
// CUDA's integer min and max (device functions of its runtime).
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline void sincospif(float x, float* s, float* c) {
    const double a = M_PI * (double)x;
    *s = (float)std::sin(a);
    *c = (float)std::cos(a);
}

namespace emulated {
// Releases warp `w`'s barrier if all its live lanes wait at it.
inline bool release_warp(size_t w) {
    bool all = true, any = false;
    for (size_t t = 32 * w; t < 32 * w + 32 && t < fibers.size(); t++) {
        if (fibers[t].done) continue;
        any = true;
        all = all && fibers[t].wait == Wait::Warp;
    }
    if (!(any && all)) return false;
    for (size_t t = 32 * w; t < 32 * w + 32 && t < fibers.size(); t++) fibers[t].wait = Wait::None;
    return true;
}

// Releases the block's barrier if every live thread waits at it.
inline bool release_block() {
    bool all = true, any = false;
    for (auto& f : fibers) {
        if (f.done) continue;
        any = true;
        all = all && f.wait == Wait::Block;
    }
    if (!(any && all)) return false;
    for (auto& f : fibers) f.wait = Wait::None;
    return true;
}

// Runs warp `w`'s threads as far as they go: each to its next barrier,
// the warp's own barriers released as they fill, until every lane waits at
// the block's barrier or is done. Whether it ran anything.
inline bool run_warp(size_t w) {
    bool progressed = false;
    for (;;) {
        bool ran = false;
        for (size_t t = 32 * w; t < 32 * w + 32 && t < fibers.size(); t++) {
            if (fibers[t].done || fibers[t].wait != Wait::None) continue;
            current = (unsigned int)t;
            threadIdx = uint3{(unsigned int)t, 0, 0};
            swapcontext(&scheduler, &fibers[t].context);
            ran = true;
        }
        const bool released = release_warp(w);
        progressed = progressed || ran || released;
        if (!ran && !released) return progressed;
    }
}

// Runs `body` over a grid of (gx, gy) blocks of `threads` threads, block
// after block, each thread to its next barrier in turn.
inline void launch(unsigned int gx, unsigned int gy, unsigned int threads, const std::function<void()>& body_of_kernel) {
    gridDim = uint3{gx, gy, 1};
    blockDim = uint3{threads, 1, 1};
    kernel = &body_of_kernel;
    for (unsigned int y = 0; y < gy; y++) {
        for (unsigned int x = 0; x < gx; x++) {
            blockIdx = uint3{x, y, 0};
            fibers.assign(threads, Fiber{});
            slots.assign(threads + 32, 0);
            while (stacks.size() < threads) stacks.emplace_back(new char[STACK_BYTES]);
            for (unsigned int t = 0; t < threads; t++) {
                Fiber& f = fibers[t];
                getcontext(&f.context);
                f.context.uc_stack.ss_sp = stacks[t].get();
                f.context.uc_stack.ss_size = STACK_BYTES;
                f.context.uc_link = nullptr;
                makecontext(&f.context, body, 0);
            }
            // Each warp as far as it goes before the next starts: a read of
            // another warp's writes without the block barrier between them
            // sees what was there before.
            for (;;) {
                bool progressed = false;
                for (size_t w = 0; w * 32 < threads; w++) progressed = run_warp(w) || progressed;
                bool done = true;
                for (auto& f : fibers) done = done && f.done;
                if (done) break;
                if (release_block()) continue;
                if (!progressed) {
                    std::fprintf(stderr, "deadlock in block (%u, %u): threads wait at barriers that cannot release\n", x, y);
                    std::exit(3);
                }
            }
        }
    }
}
}  // namespace emulated
