#!/usr/bin/env python3
"""Golden Welch peaks from scipy, converted to RLX's scaling.

Run once by a developer with numpy and scipy installed (CI does not run it):

    python3 scripts/gen_golden.py

For each configuration it writes, under tests/golden/:
  <name>.graph       an RLX graph: segments -> window Mul -> [x, Sub(x, x)] -> Fft -> WelchPeaks
  <name>_segs.npy    its input: the 50%-overlapping segments of B random signals, [B*S, L] f32
  <name>_peaks.npy   the expected output, [B, 2k] (bin, power) from scipy.signal.welch + top-k

How RLX's PSD differs from scipy.signal.welch, and the conversion applied here:
  * scale: scipy's density scaling divides by fs * sum(w^2); RLX does not. RLX = scipy * fs * sum(w^2).
  * window: RLX applies none itself (the graph multiplies by a window constant, here periodic Hann
    or boxcar, the same arrays scipy uses).
  * detrend: scipy defaults to 'constant' (subtract each segment's mean); RLX never detrends, so
    scipy is called with detrend=False.
  * doubling: both double every one-sided bin but DC and, for even nfft, Nyquist. For odd nfft scipy
    doubles the last bin too; RLX does not, so that bin is halved back here.
  * top-k: descending power, ties to the lower bin.
"""
import json
import os
import numpy as np
from scipy import signal

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "golden")

CONFIGS = [
    # name, batch, segment length, segments, k, window
    ("hann_n256", 4, 256, 8, 16, "hann"),
    ("boxcar_n128", 3, 128, 4, 8, "boxcar"),
    ("hann_n100", 2, 100, 5, 10, "hann"),
    ("boxcar_n31_odd", 2, 31, 3, 16, "boxcar"),
]


def f32_bytes(a):
    return list(np.asarray(a, dtype="<f4").tobytes())


def graph_text(name, rows, n, segments, k, window):
    batch = rows // segments
    return "\n".join([
        f"// Golden graph (scripts/gen_golden.py): {name}",
        f"graph @{name} {{",
        f'  %0 = {{"Input":{{"name":"segs"}}}} : [{rows}, {n}] f32 #"segs"',
        f'  %1 = {{"Constant":{{"data":{json.dumps(f32_bytes(window), separators=(",", ":"))}}}}} : [{n}] f32',
        f'  %2 = {{"Binary":"Mul"}}(%0, %1) : [{rows}, {n}] f32',
        f'  %3 = {{"Binary":"Sub"}}(%2, %2) : [{rows}, {n}] f32',
        f'  %4 = {{"Concat":{{"axis":1}}}}(%2, %3) : [{rows}, {2 * n}] f32',
        f'  %5 = {{"Fft":{{"inverse":false,"norm":"Backward","algo":"Native"}}}}(%4) : [{rows}, {2 * n}] f32',
        f'  %6 = {{"WelchPeaks":{{"k":{k},"n_segments":{segments}}}}}(%5) : [{batch}, {2 * k}] f32 #"peaks"',
        "  return %6",
        "}",
        "",
    ])


def main():
    rng = np.random.default_rng(20261121)
    os.makedirs(OUT, exist_ok=True)
    for name, batch, n, segments, k, window_name in CONFIGS:
        hop = n // 2
        samples = (segments - 1) * hop + n
        x = rng.standard_normal((batch, samples)).astype(np.float32)
        window = signal.get_window(window_name, n, fftbins=True).astype(np.float32)
        segs = np.stack([x[b, s * hop: s * hop + n] for b in range(batch) for s in range(segments)])
        peaks = np.zeros((batch, 2 * k), dtype=np.float32)
        for b in range(batch):
            _, p = signal.welch(x[b].astype(np.float64), fs=1.0, window=window.astype(np.float64), nperseg=n,
                                noverlap=n - hop, nfft=n, detrend=False, scaling="density", return_onesided=True)
            p = p * float(np.sum(window.astype(np.float64) ** 2))
            if n % 2 == 1:
                p[-1] /= 2.0
            order = sorted(range(len(p)), key=lambda j: (-p[j], j))[:k]
            for i, j in enumerate(order):
                peaks[b, 2 * i] = j
                peaks[b, 2 * i + 1] = p[j]
        with open(os.path.join(OUT, f"{name}.graph"), "w") as f:
            f.write(graph_text(name, batch * segments, n, segments, k, window))
        np.save(os.path.join(OUT, f"{name}_segs.npy"), segs.astype("<f4"))
        np.save(os.path.join(OUT, f"{name}_peaks.npy"), peaks.astype("<f4"))
        print(f"wrote {name}: batch {batch}, n {n}, segments {segments}, k {k}, window {window_name}")


if __name__ == "__main__":
    main()
