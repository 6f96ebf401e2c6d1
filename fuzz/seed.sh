#!/usr/bin/env bash
# Seed corpora for the fuzz targets from the repository's own inputs: the
# fixtures and examples as RLX text, JSON and MLIR (written by rlx-opt), the
# golden .npy files, and small traces. Usage: fuzz/seed.sh RLX_OPT_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
rlx_opt="$1"
corpus=fuzz/corpus
mkdir -p "$corpus"/{rlx_text,json,mlir,npy,trace,fused_attrs,fuse_pass,device_profile,trace_diff,log_mel_attrs}
for g in tests/fixtures/*.graph examples/graphs/*.graph; do
  base=$(basename "$g" .graph)
  cp "$g" "$corpus/rlx_text/$base"
  "$rlx_opt" "$g" --emit=json -o "$corpus/json/$base" 2>/dev/null || rm -f "$corpus/json/$base"
  "$rlx_opt" "$g" --emit=mlir -o "$corpus/mlir/$base" 2>/dev/null || rm -f "$corpus/mlir/$base"
  # The fused form too: its attributes seed the fused-op target.
  if "$rlx_opt" "$g" --fuse-welch-peaks=force=true -o "$corpus/rlx_text/$base.fused" 2>/dev/null; then
    grep -o '"attrs":\[[0-9,]*\]' "$corpus/rlx_text/$base.fused" | head -1 | sed 's/"attrs":\[//; s/\]//' | tr ',' '\n' \
      | awk 'NF { printf "%c", $1 }' > "$corpus/fused_attrs/$base" || true
  else
    rm -f "$corpus/rlx_text/$base.fused"
  fi
done
cp tests/golden/*.npy "$corpus/npy/"
# The fused log-mel op's attributes: a few by hand (each layout, a window,
# power_scale, inf_is_nan, a lowering), and the ones fuse-log-mel writes for the log-mel
# goldens (where rlx-opt has the pass).
printf '%s' '{"input_layout":"frames","n_fft":400,"frame_len":400,"n_mels":80}' > "$corpus/log_mel_attrs/whisper"
printf '%s' '{"input_layout":"frames","n_fft":512,"frame_len":400,"n_mels":128,"window":true}' > "$corpus/log_mel_attrs/window_padded"
printf '%s' '{"input_layout":"signal","n_fft":400,"frame_len":400,"hop":160,"frames":10,"n_mels":80,"inf_is_nan":true}' > "$corpus/log_mel_attrs/signal"
printf '%s' '{"input_layout":"frames","n_fft":64,"frame_len":60,"n_mels":10,"power_scale":0.25,"lowering":"host"}' > "$corpus/log_mel_attrs/scaled_host"
for g in tests/golden/log_mel/*.graph; do
  base=$(basename "$g" .graph)
  if "$rlx_opt" "$g" --fuse-log-mel=force=true -o "$corpus/log_mel_attrs/$base.fused" 2>/dev/null; then
    grep -o '"attrs":\[[0-9,]*\]' "$corpus/log_mel_attrs/$base.fused" | head -1 | sed 's/"attrs":\[//; s/\]//' | tr ',' '\n' \
      | awk 'NF { printf "%c", $1 }' > "$corpus/log_mel_attrs/$base" || true
  fi
  rm -f "$corpus/log_mel_attrs/$base.fused"
done
# Small traces whole; the recorded GPU traces are too big to mutate.
for t in tests/data/traces/*.json; do
  [[ -e "$t" && $(stat -c %s "$t") -lt 65536 ]] && cp "$t" "$corpus/trace/"
done
printf '%s' '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":1,"args":{"External id":1}},{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":0,"dur":2,"args":{"External id":1}},{"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH","ts":3,"dur":1,"args":{"bytes":64}}],"deviceProperties":[{"name":"NVIDIA H100","warpSize":32}]}' > "$corpus/trace/minimal.json"
# The shipped device profiles; trace pairs as trace_diff reads them (two
# traces joined by a NUL byte).
cp examples/profiles/*.json "$corpus/device_profile/"
for t in "$corpus"/trace/*; do
  { cat "$t"; printf '\0'; cat "$corpus/trace/minimal.json"; } > "$corpus/trace_diff/$(basename "$t")"
done
