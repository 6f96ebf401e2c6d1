#!/usr/bin/env python3
"""Shared-memory bank model of the CUDA FFT core (kernels/fft_mixed_radix.cuh).

For each FFT length, the accesses a one-pass block makes to its FFT buffer: the
digit-reversed stores of a pair's samples, each stage's butterfly loads and
stores (one per stage and value), and the power's reads of bins j and n - j;
each as the warp issues it, 64-bit values, 16 lanes a wavefront. It prints the
wavefronts per request (1.00: no bank conflict) under the kernel's padding
(`fft_at`) and the ones it replaced, and searches linear paddings
i + a*(i>>4) + b*(i>>6) + c*(i>>8) with --search.

    python3 scripts/cuda-bank-model.py            # the table
    python3 scripts/cuda-bank-model.py --search   # the best paddings (a minute)

Nsight Compute measured 1.65 at n_fft 256 on an H100 with one float2 after
every 16 (the model: 1.64); the padding chosen from this model ran the goal
cell 7% faster (docs/performance.md).
"""
import sys

LENGTHS = [64, 128, 256, 512, 1024, 2048, 4096, 400, 1000, 480]
PADDINGS = {
    "none": lambda i: i,
    "1 per 16 (before)": lambda i: i + (i >> 4),
    "5 per 16, 1 per 256 (fft_at)": lambda i: i + 5 * (i >> 4) + (i >> 8),
}


def radices(n):
    """lower::fft::fft_radices: 4s, a 2, 3s, 5s."""
    counts = {}
    for p in (2, 3, 5):
        counts[p] = 0
        while n % p == 0:
            n //= p
            counts[p] += 1
    assert n == 1, "a prime factor above 5"
    return [4] * (counts[2] // 2) + [2] * (counts[2] % 2) + [3] * counts[3] + [5] * counts[5]


def position(t, rad):
    """fft_position: sample t's digits reversed."""
    spans = [1]
    for r in rad[:-1]:
        spans.append(spans[-1] * r)
    p = 0
    for s in range(len(rad) - 1, -1, -1):
        p += (t % rad[s]) * spans[s]
        t //= rad[s]
    return p


def block_threads(n):
    """analysis::plan::block_threads for a CUDA one-pass block."""
    if n <= 512:
        return 32
    threads = 1
    while threads * 2 <= min(256, n // 16):
        threads *= 2
    return threads


def wavefronts(slots):
    """Wavefronts of one warp-wide 64-bit access (None: lane inactive)."""
    total = 0
    for h in range(0, len(slots), 16):
        banks = {}
        for a in slots[h:h + 16]:
            if a is not None:
                for word in (2 * a, 2 * a + 1):
                    banks.setdefault(word % 32, set()).add(word)
        total += max((len(w) for w in banks.values()), default=0)
    return total


def requests(slots):
    return sum(1 for h in range(0, len(slots), 16) if any(a is not None for a in slots[h:h + 16]))


def ratio(n, at):
    rad, wg = radices(n), block_threads(n)
    accesses = []
    for i in range((n + wg - 1) // wg):
        for w in range(0, wg, 32):
            accesses.append([at(position(t, rad)) if t < n else None for t in range(i * wg + w, i * wg + w + 32)])
    span = 1
    for r in rad:
        butterflies = n // r
        for first in range(0, butterflies, wg):
            for w in range(0, wg, 32):
                for j in range(r):
                    lanes = []
                    for p in range(first + w, first + w + 32):
                        if p < butterflies and p - first < wg:
                            lanes.append(at((p // span) * span * r + p % span + j * span))
                        else:
                            lanes.append(None)
                    accesses += [lanes, lanes]  # load and store
        span *= r
    bins = n // 2 + 1
    for i in range((bins + wg - 1) // wg):
        for w in range(0, wg, 32):
            for mirror in (False, True):
                lanes = [None if j >= bins else at((n - j) % n if mirror else j) for j in range(i * wg + w, i * wg + w + 32)]
                accesses.append(lanes)
    return sum(map(wavefronts, accesses)) / sum(map(requests, accesses))


def main():
    if "--search" in sys.argv:
        scored = []
        for a in range(9):
            for b in range(9):
                for c in range(9):
                    at = lambda i, a=a, b=b, c=c: i + a * (i >> 4) + b * (i >> 6) + c * (i >> 8)
                    ratios = [ratio(n, at) for n in LENGTHS]
                    scored.append((sum(ratios), (a, b, c), ratios))
        scored.sort()
        for total, abc, ratios in scored[:8]:
            print(f"i + {abc[0]}*(i>>4) + {abc[1]}*(i>>6) + {abc[2]}*(i>>8): sum {total:.2f}  " + " ".join(f"{n}:{r:.2f}" for n, r in zip(LENGTHS, ratios)))
        return
    print("wavefronts per request (1.00: conflict-free)")
    print(f"{'padding':<30}" + "".join(f"{n:>7}" for n in LENGTHS))
    for name, at in PADDINGS.items():
        print(f"{name:<30}" + "".join(f"{ratio(n, at):>7.2f}" for n in LENGTHS))


if __name__ == "__main__":
    main()
