#!/usr/bin/env bash
# Builds, here, the release binaries a GPU session runs, and packs them for the
# device machine, which has no Rust toolchain: stripped and xz-compressed into
# gpu-pack/ (ignored by git; carried to the device with `carry: ["gpu-pack"]`,
# 64 MiB at most). On the device, `bash scripts/gpu-run.sh [STEP …]` unpacks
# and runs them. A GPU window is short (15 minutes of device time per task):
# everything that can be prepared is prepared here.
#
#   scripts/gpu-pack.sh            # tests, benches and rlx-run, with CUDA
#
# The pack holds:
#   tests     gpu, plans (the core: every corpus op and plan on CUDA vs the reference)
#             gpu_log_mel (the core: the log-mel CUDA kernel vs the reference, Whisper's 400 included)
#             cuda_session (rlx-ext: RLX alone vs RLX + rlx-ext on RLX's CUDA backend)
#             log_mel_cuda_session (rlx-ext: the log-mel op on its CUDA kernels in RLX)
#   benches   gpu and roofline (the core: the kernels against the copy
#             bandwidth and cuFFT), session and fidelity (rlx-ext, RLX's Session)
#   rlx-run   for `rlx-run --calibrate --target=cuda` (a device profile of the card)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rlx-opt/target}"
export CARGO_INCREMENTAL=0
PACK=gpu-pack
rm -rf "$PACK" && mkdir -p "$PACK/bin"

# Each cargo invocation lists its executables as JSON; the last path of each
# named target is the binary to pack.
executables() { # NAMES test|bin: a test harness, or the binary itself
  python3 -c '
import json, sys
wanted, kind = set(sys.argv[1].split(",")), sys.argv[2]
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or m["target"]["name"] not in wanted:
        continue
    # `--tests` also builds each binary'"'"'s own unit-test harness, of the
    # same name: only the kind asked for is packed.
    if m["profile"]["test"] == (kind == "test"):
        print(m["target"]["name"], m["executable"])
' "$1" "$2"
}
pack() { # NAME PATH
  cp "$2" "$PACK/bin/$1"
  strip "$PACK/bin/$1"
  xz -T0 -6 -f "$PACK/bin/$1"
  echo "packed $1 ($(du -h "$PACK/bin/$1.xz" | cut -f1))"
}

echo "== building (release; the first build takes ~15 minutes on 2 cores)"
cargo build --locked --release -p rlx-welch-opt --tests --message-format=json-render-diagnostics \
  | executables gpu,plans,gpu_log_mel test | while read -r name path; do pack "$name" "$path"; done
cargo build --locked --release -p rlx-ext --features cuda --tests --message-format=json-render-diagnostics \
  | executables cuda_session,log_mel_cuda_session test | while read -r name path; do pack "$name" "$path"; done
cargo build --locked --release -p rlx-ext --features cuda --bin rlx-run --message-format=json-render-diagnostics \
  | executables rlx-run bin | while read -r name path; do pack "$name" "$path"; done
cargo bench --locked --no-run -p rlx-welch-opt --bench gpu --bench roofline --message-format=json-render-diagnostics \
  | executables gpu,roofline test | while read -r name path; do pack "bench-$name" "$path"; done
cargo bench --locked --no-run -p rlx-ext --features cuda --bench session --bench fidelity --message-format=json-render-diagnostics \
  | executables session,fidelity test | while read -r name path; do pack "bench-$name" "$path"; done

for want in gpu plans gpu_log_mel cuda_session log_mel_cuda_session rlx-run bench-gpu bench-roofline bench-session bench-fidelity; do
  [[ -e $PACK/bin/$want.xz ]] || { echo "gpu-pack: $want was not built" >&2; exit 1; }
done
git rev-parse HEAD > "$PACK/commit"
ls "$PACK/bin" > "$PACK/manifest"
echo "== $(du -sh "$PACK" | cut -f1) in $PACK/ (commit $(cut -c1-8 "$PACK/commit")); run on the device with:"
echo "   run(command='bash scripts/gpu-run.sh', carry=['gpu-pack'])"
