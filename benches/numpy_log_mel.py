#!/usr/bin/env python3
"""The numpy pipeline the fused log-mel op is measured against (issue 28):
rfft of every frame, one-sided power, a dense mel matmul, log10, the per-frame
floor at max - 8, (v + 4) / 4. Median of 7 runs after a warm-up, in ms, on the
same inputs' shape as `cargo bench -p rlx-ext --bench log_mel` (random frames,
an HTK-style triangular filterbank).

    python3 benches/numpy_log_mel.py [--frames 24000] [--n-fft 400] [--mels 80]

Prints one JSON line: {"frames":…, "n_fft":…, "mels":…, "median_ms":…}.
"""
import argparse
import json
import time

import numpy as np


def filterbank(n_fft, n_mels, sr=16000.0):
    def mel(hz):
        return 2595.0 * np.log10(1.0 + hz / 700.0)

    def hz(m):
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

    bins = n_fft // 2 + 1
    freqs = np.arange(bins) * sr / n_fft
    edges = hz(np.linspace(mel(0.0), mel(sr / 2), n_mels + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs - lo) / np.maximum(mid - lo, 1e-9)
    down = (hi - freqs) / np.maximum(hi - mid, 1e-9)
    return np.maximum(0.0, np.minimum(up, down)).astype(np.float32)


def log_mel(frames, filters):
    spec = np.fft.rfft(frames, axis=-1)
    power = (spec.real ** 2 + spec.imag ** 2).astype(np.float32)
    mel = power @ filters.T
    v = np.log10(np.maximum(mel, 1e-10))
    v = np.maximum(v, v.max(axis=-1, keepdims=True) - 8.0)
    return (v + 4.0) / 4.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=24000)
    ap.add_argument("--n-fft", type=int, default=400)
    ap.add_argument("--mels", type=int, default=80)
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    frames = rng.uniform(-1, 1, (a.frames, a.n_fft)).astype(np.float32)
    filters = filterbank(a.n_fft, a.mels)
    log_mel(frames, filters)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        log_mel(frames, filters)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    print(json.dumps({"frames": a.frames, "n_fft": a.n_fft, "mels": a.mels, "median_ms": round(times[3], 3)}))


if __name__ == "__main__":
    main()
