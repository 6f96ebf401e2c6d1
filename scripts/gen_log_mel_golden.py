#!/usr/bin/env python3
"""Golden Whisper-style log-mel spectra from numpy, as RLX's LogMel defines them.

Run once by a developer with numpy installed (CI does not run it):

    python3 scripts/gen_log_mel_golden.py

An independent reference for RLX's `Op::LogMel` chain and for the fused
`rlx_opt.log_mel` op: nothing here comes from RLX or rlx-opt. For each
configuration it writes, under tests/golden/log_mel/ (a folder of its own, so
that tests/golden.rs, which runs every graph in tests/golden/, keeps its four):
  <name>.graph         an RLX graph: frames -> [Mul window] -> [x | Sub(x, x)] -> Fft -> LogMel(filters)
  <name>_frames.npy    its input, [F, n_fft] f32
  <name>_filters.npy   the filters, [n_mels, n_fft/2+1] f32, when the graph takes them as an input
                       (otherwise they are a Constant in the graph)
  <name>_logmel.npy    the expected output, [F, n_mels] f32

RLX's definition (rlx-ir 0.2.19, `audio::log_mel_block_f32`; docs in
shared/docs/log-mel.md), computed here in float64 from the float32 inputs:
  * power: |rfft(frame)|^2 over the n_fft/2+1 one-sided bins; no doubling, no
    scaling (RLX's Fft with norm Backward does not scale the forward transform);
  * mel: filters @ power (zeros inside a row's non-zero span change nothing);
  * compress: v = log10(max(v, 1e-10)); per frame (not per clip, unlike
    OpenAI's Whisper) v = max(v, max(v) - 8); then (v + 4) / 4.
The filterbank is `rlx_ir::filterbank::mel_filterbank` rebuilt here step by
step with Python floats (the same libm log10 and pow, the same operation
order), so tests/golden_log_mel.rs can also check it against rlx-ir's.

The frames are audio-like: a few sinusoids plus noise at a range of
loudnesses, one silent frame (every mel band at the 1e-10 floor) where there
are enough frames, and n_fft 64 with 40 mels has filter rows with no bin at all
(their -10 is raised to the frame's floor), so the floor is exercised.
"""
import json
import math
import os
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "log_mel")

SAMPLE_RATE = 16000.0
LOG_FLOOR = 1e-10      # rlx-ir compress_log_mel: log10(max(v, 1e-10))
DYNAMIC_RANGE = 8.0    # per-frame floor at max - 8

CONFIGS = [
    # name, n_fft, n_mels, frames, filters ("const" in the graph or "input"), window, f_min, f_max
    ("n64_m10_f300", 64, 10, 300, "const", None, 0.0, 8000.0),
    ("n64_m40_f37_input", 64, 40, 37, "input", None, 0.0, 8000.0),
    ("n256_m40_f37", 256, 40, 37, "const", None, 0.0, 8000.0),
    ("n400_m80_f37_input", 400, 80, 37, "input", None, 0.0, 8000.0),
    ("n400_m80_f8_hann", 400, 80, 8, "input", "hann", 0.0, 8000.0),
    ("n400_m128_f1", 400, 128, 1, "const", None, 0.0, 8000.0),
    ("n512_m128_f4_input", 512, 128, 4, "input", None, 20.0, 7600.0),
]


def hz_to_mel(hz):
    return 2595.0 * math.log10(1.0 + hz / 700.0)


def mel_to_hz(mel):
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_filterbank(sample_rate, n_fft, n_mels, f_min, f_max):
    """rlx_ir::filterbank::mel_filterbank: HTK triangles, peak 1, not area-normalised."""
    n_bins = n_fft // 2 + 1
    f_max = min(f_max, sample_rate / 2.0)
    m_lo, m_hi = hz_to_mel(max(f_min, 0.0)), hz_to_mel(f_max)
    edges = [mel_to_hz(m_lo + (m_hi - m_lo) * i / (n_mels + 1)) for i in range(n_mels + 2)]
    fb = np.zeros((n_mels, n_bins), dtype=np.float32)
    for m in range(n_mels):
        lo, c, hi = edges[m], edges[m + 1], edges[m + 2]
        for k in range(n_bins):
            f = k * sample_rate / n_fft
            if f <= lo or f >= hi:
                w = 0.0
            elif f <= c:
                w = (f - lo) / max(c - lo, 1e-12)
            else:
                w = (hi - f) / max(hi - c, 1e-12)
            fb[m, k] = w
    return fb


def hann_periodic(n):
    """rlx_ir::filterbank::hann_window (the STFT convention), as f32."""
    return np.array([0.5 - 0.5 * math.cos(2.0 * math.pi * i / n) for i in range(n)], dtype=np.float32)


def frames_for(rng, count, n):
    """Audio-like frames: 1-3 sinusoids and noise 40 dB down, loudness 1e-3..1e2; frame 1 silent."""
    t = np.arange(n, dtype=np.float64) / SAMPLE_RATE
    out = np.zeros((count, n), dtype=np.float64)
    for f in range(count):
        if count > 2 and f == 1:
            continue
        loud = 10.0 ** rng.uniform(-3.0, 2.0)
        for _ in range(rng.integers(1, 4)):
            hz = rng.uniform(50.0, SAMPLE_RATE / 2.0)
            out[f] += rng.uniform(0.2, 1.0) * np.sin(2.0 * np.pi * hz * t + rng.uniform(0.0, 2.0 * np.pi))
        out[f] += 1e-2 * rng.standard_normal(n)
        out[f] *= loud
    return out.astype(np.float32)


def log_mel(frames, filters, window):
    """RLX's LogMel of the frames (window multiplied in first, in f32 as the graph's Mul does)."""
    x = frames if window is None else (frames * window).astype(np.float32)
    spectrum = np.fft.rfft(x.astype(np.float64), axis=-1)
    power = spectrum.real ** 2 + spectrum.imag ** 2
    mel = power @ filters.astype(np.float64).T
    v = np.log10(np.maximum(mel, LOG_FLOOR))
    v = np.maximum(v, v.max(axis=-1, keepdims=True) - DYNAMIC_RANGE)
    return ((v + 4.0) / 4.0).astype(np.float32)


def f32_bytes(a):
    return json.dumps(list(np.asarray(a, dtype="<f4").tobytes()), separators=(",", ":"))


def graph_text(name, rows, n_fft, n_mels, filters, source, window):
    bins = n_fft // 2 + 1
    lines = [
        f"// Golden graph (scripts/gen_log_mel_golden.py): {name}",
        f"graph @log_mel_{name} {{",
        f'  %0 = {{"Input":{{"name":"frames"}}}} : [{rows}, {n_fft}] f32 #"frames"',
    ]
    x = "%0"
    nxt = 1
    if window is not None:
        lines.append(f'  %{nxt} = {{"Constant":{{"data":{f32_bytes(window)}}}}} : [{n_fft}] f32')
        lines.append(f'  %{nxt + 1} = {{"Binary":"Mul"}}(%0, %{nxt}) : [{rows}, {n_fft}] f32')
        x = f"%{nxt + 1}"
        nxt += 2
    sub, cat, fft, fil, out = (nxt + i for i in range(5))
    lines += [
        f'  %{sub} = {{"Binary":"Sub"}}({x}, {x}) : [{rows}, {n_fft}] f32',
        f'  %{cat} = {{"Concat":{{"axis":1}}}}({x}, %{sub}) : [{rows}, {2 * n_fft}] f32',
        f'  %{fft} = {{"Fft":{{"inverse":false,"norm":"Backward","algo":"Native"}}}}(%{cat}) : [{rows}, {2 * n_fft}] f32',
    ]
    if source == "input":
        lines.append(f'  %{fil} = {{"Input":{{"name":"filters"}}}} : [{n_mels}, {bins}] f32 #"filters"')
    else:
        lines.append(f'  %{fil} = {{"Constant":{{"data":{f32_bytes(filters)}}}}} : [{n_mels}, {bins}] f32')
    lines += [
        f'  %{out} = LogMel(%{fft}, %{fil}) : [{rows}, {n_mels}] f32 #"logmel"',
        f"  return %{out}",
        "}",
        "",
    ]
    return "\n".join(lines)


def main():
    rng = np.random.default_rng(20261126)
    os.makedirs(OUT, exist_ok=True)
    for name, n_fft, n_mels, count, source, window_name, f_min, f_max in CONFIGS:
        filters = mel_filterbank(SAMPLE_RATE, n_fft, n_mels, f_min, f_max)
        window = hann_periodic(n_fft) if window_name == "hann" else None
        frames = frames_for(rng, count, n_fft)
        expected = log_mel(frames, filters, window)
        with open(os.path.join(OUT, f"{name}.graph"), "w") as f:
            f.write(graph_text(name, count, n_fft, n_mels, filters, source, window))
        np.save(os.path.join(OUT, f"{name}_frames.npy"), frames.astype("<f4"))
        if source == "input":
            np.save(os.path.join(OUT, f"{name}_filters.npy"), filters.astype("<f4"))
        np.save(os.path.join(OUT, f"{name}_logmel.npy"), expected.astype("<f4"))
        empty = int((filters.max(axis=1) == 0).sum())
        print(f"wrote {name}: n_fft {n_fft}, {n_mels} mels ({empty} empty), {count} frames, filters {source}, "
              f"window {window_name or 'none'}, f {f_min:g}..{f_max:g} Hz")


if __name__ == "__main__":
    main()
