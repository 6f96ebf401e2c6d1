#!/usr/bin/env python3
"""PyTorch's usual Welch peaks on the GPU, timed with CUDA events: frames by
unfold, window, rfft, power, mean over segments, topk. For comparison with
`cargo bench --bench gpu` on the same card (n_fft 256, 8 segments, k 16).

    python3 benches/torch_welch.py
"""
import torch

n, segments, k = 256, 8, 16
hop = n // 2
dev = torch.device("cuda")
print(f"device: {torch.cuda.get_device_name(0)}")
print(f"{'batch':>7} {'torch_ms':>10}")
window = torch.hann_window(n, periodic=True, device=dev)
for batch in (1024, 8192, 65536):
    x = torch.rand(batch, (segments - 1) * hop + n, device=dev) * 2 - 1

    def once():
        frames = x.unfold(-1, n, hop) * window
        spec = torch.fft.rfft(frames, dim=-1)
        power = (spec.real ** 2 + spec.imag ** 2).mean(dim=1)
        return torch.topk(power, k, dim=-1)

    for _ in range(3):
        once()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        start.record()
        once()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    print(f"{batch:>7} {times[len(times) // 2]:>10.3f}")
