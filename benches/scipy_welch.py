#!/usr/bin/env python3
"""Median time (ms) of scipy.signal.welch + top-k on BATCH signals of SEGMENTS
half-overlapping segments of N_FFT samples; prints one number. Used by
`cargo bench --bench welch_cpu` and `--bench long_signal`; exits 1 when scipy
is missing. WINDOW is a scipy window name (boxcar unless given); RUNS the
timed calls (5 unless given).

    python3 benches/scipy_welch.py BATCH N_FFT SEGMENTS K [WINDOW [RUNS]]
"""
import sys
import time

try:
    import numpy as np
    from scipy import signal
except ImportError:
    sys.exit(1)

batch, n, segments, k = (int(a) for a in sys.argv[1:5])
window = sys.argv[5] if len(sys.argv) > 5 else "boxcar"
runs = int(sys.argv[6]) if len(sys.argv) > 6 else 5
hop = n // 2
x = np.random.default_rng(1).uniform(-1, 1, (batch, (segments - 1) * hop + n)).astype(np.float32)


def once():
    _, p = signal.welch(x, window=window, nperseg=n, noverlap=n - hop, detrend=False, axis=-1)
    top = np.argpartition(-p, k - 1, axis=-1)[:, :k]
    return np.take_along_axis(p, top, axis=-1)


once()
times = []
for _ in range(runs):
    start = time.perf_counter()
    once()
    times.append((time.perf_counter() - start) * 1e3)
print(sorted(times)[len(times) // 2])
