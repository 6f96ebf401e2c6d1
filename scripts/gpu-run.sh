#!/usr/bin/env bash
# Runs, on the GPU machine, what scripts/gpu-pack.sh packed here: the CUDA
# tests first (correctness), then the benches. Each step's log (and the
# roofline's JSON and SVG, the CUDA profile) lands in $OUT/results.tgz, what
# the device tool brings back; a summary line per step goes to stdout.
#
#   bash scripts/gpu-run.sh                 # every step
#   bash scripts/gpu-run.sh tests           # only the tests
#   bash scripts/gpu-run.sh bench-gpu calibrate
#   bash scripts/gpu-run.sh pending         # what the last GPU session left to answer
#   ROOFLINE_BUDGET_S=120 bash scripts/gpu-run.sh bench-roofline
#
# cudarc finds NVRTC and the driver as libnvrtc.so / libcuda.so: the device's
# CUDA lives in /usr/local/cuda/lib64.
#   STEP_TIMEOUT=300 bash scripts/gpu-run.sh   # seconds per step (default 240)
#
# Exits 1 when a step failed (its log says why), so the device tool's rc
# shows it.
set -uo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpu-out}"
mkdir -p "$OUT"
# The device tool brings back at most 8 files: every log and result goes to
# $RESULTS, and after each step $OUT/results.tgz is remade from it (so a run
# cut short still brings back what it finished).
RESULTS=/tmp/gpu-results
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RUST_BACKTRACE=1
PACK=gpu-pack
[[ -d $PACK/bin ]] || { echo "no $PACK/bin: run scripts/gpu-pack.sh here first and carry gpu-pack" >&2; exit 2; }
echo "pack of commit $(cat $PACK/commit 2>/dev/null)"
packed=("$PACK"/bin/*.xz)
(( ${#packed[@]} )) || { echo "$PACK/bin holds nothing packed" >&2; exit 2; }
for f in "${packed[@]}"; do xz -d -k -f "$f" && chmod +x "${f%.xz}"; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$RESULTS/device.txt"
# A Vulkan driver on the device runs the WGSL kernels on the real GPU too.
ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>/dev/null | tee "$RESULTS/vulkan-icds.txt"

bin="$PWD/$PACK/bin"
# The test binaries' CPU emulations of the CUDA kernels (tests/cuda_emulation,
# minutes; CI runs them) are skipped here: GPU time goes to the GPU (each
# step that runs `plans` or `gpu_log_mel` passes --skip emulated). So are
# the plans' NVRTC compiles of every arch and form (`--skip compile_for`:
# 3 minutes on one thread, which a step's 240 s would not have held with
# the GPU run after them; CI compiles them all).
failed=0
PLANS_ARGS=(--nocapture --test-threads=1 --skip emulated --skip compile_for)
# Each step runs where cargo would run it (the package root: the tests read
# their fixtures relative to it), within STEP_TIMEOUT seconds.
# A step asked twice (`all pending`, `tests test-plans`) runs once: its log
# is kept and the GPU's time is not spent on it again.
declare -A RAN=()
step() { # NAME DIR COMMAND…
  local name=$1 dir=$2; shift 2
  MATCHED=1
  [[ -n ${RAN[$name]:-} ]] && return 0
  RAN[$name]=1
  local start=$SECONDS
  (cd "$dir" && timeout "${STEP_TIMEOUT:-240}" "$@") >"$RESULTS/$name.log" 2>&1
  local rc=$?
  (( rc == 0 )) || failed=1
  # The outcome first (a test's result or panic, a bench's goals), then how
  # many tests skipped (each says why in the log).
  local skipped; skipped=$(grep -c 'SKIPPED' "$RESULTS/$name.log")
  printf '%-16s rc=%s %4ss  %s%s\n' "$name" "$rc" $((SECONDS - start)) "$(grep -E '^test result|FAILED|panicked|^goals' "$RESULTS/$name.log" | head -3 | tr '\n' ' ')" \
    "$( (( skipped )) && echo " ($skipped skipped)")"
  tar -czf "$OUT/results.tgz" -C "$RESULTS" .
}
# A step runs when named, when its group is named (tests, benches), or with no names.
# Steps run in the order asked (`pending`'s order too, in its place among
# the names): the script's steps below are gone through once for each name
# asked, and `want STEP` says whether STEP is the one asked now (`all`:
# every step; a name without a dash, a group: `tests` is every test-…).
want() { local s=$ASKED; [[ $s == all || $s == "$1" || ($s != *-* && $s == "${1%%-*}"*) ]]; }
ASKED_NAMES=("$@"); [[ ${#ASKED_NAMES[@]} -eq 0 ]] && ASKED_NAMES=(all)
# `pending`: what the last GPU session (stop 53, an H200) left to answer,
# in the order a short window should answer it. Every alternative CUDA
# form ran there against the reference and was A/B'd against the form it
# would replace (src/opt_in.rs holds the figures); five are now the
# default. Left: the log-mel op inside RLX under its per-output bound
# (1e-4 absolute for log-mel values; the H200 ran it relative for every
# output), the whole grid with the register FFT's rule since
# (lower::cuda::REGISTER_FFT_MOST_BLOCKS: the load pass on grids past
# 1,024 blocks, a choice between two forms that both ran and matched)
# after the tests of the defaults, its A/B on the one-warp cells, RLX's
# session and the fidelity bench on CUDA. Each step's summary line says
# how long it took; a step that did not fit one call is named in the next.
PENDING=(test-log_mel_cuda_session test-plans test-gpu test-cuda_session bench-roofline ab-register-fft bench-session bench-fidelity)
STEPS=()
for name in "${ASKED_NAMES[@]}"; do
  if [[ $name == pending ]]; then STEPS+=("${PENDING[@]}"); else STEPS+=("$name"); fi
done

run_steps() {
want test-gpu && step test-gpu . "$bin/gpu" --nocapture --test-threads=1
want test-plans && step test-plans . "$bin/plans" "${PLANS_ARGS[@]}"
# The plans again with radix-16 passes (the grouping ab-passes compares).
want test-plans16 && RLX_OPT_CUDA_PASS_POINTS=16 step test-plans16 . "$bin/plans" "${PLANS_ARGS[@]}"
# Every alternative Welch form on at once, then every one off (the kernels
# as first written, which ran on an H100 and an H200 before the forms: with
# five forms on by default, their `NAME=0` side keeps a step of its own):
# the plans, then inside RLX. `with_welch_forms VALUE COMMAND…`: COMMAND
# with every alternative form of the Welch kernels (src/opt_in.rs's
# CudaForm::ALL but the log-mel warps, which have steps of their own) set
# to VALUE (1 on, 0 off), exported for it alone.
with_welch_forms() {
  local value=$1; shift
  local -x RLX_OPT_CUDA_FOUR_STEP=$value RLX_OPT_CUDA_OCCUPANCY=$value RLX_OPT_CUDA_WARP_TOPK=$value RLX_OPT_CUDA_LOAD_PASS=$value \
    RLX_OPT_CUDA_PACKED_SEGMENT=$value RLX_OPT_CUDA_REGISTER_FFT=$value
  "$@"
}
want test-plans-opt-ins && with_welch_forms 1 step test-plans-opt-ins . "$bin/plans" "${PLANS_ARGS[@]}"
want test-cuda_session-opt-ins && with_welch_forms 1 step test-cuda_session-opt-ins rlx-ext "$bin/cuda_session" --nocapture --test-threads=1
want test-plans-first-forms && with_welch_forms 0 step test-plans-first-forms . "$bin/plans" "${PLANS_ARGS[@]}"
want test-cuda_session-first-forms && with_welch_forms 0 step test-cuda_session-first-forms rlx-ext "$bin/cuda_session" --nocapture --test-threads=1
# The log-mel kernel's block form (a block per frame), rlx-run's runtime.
want test-gpu_log_mel-blocks && RLX_OPT_CUDA_LOG_MEL_WARPS=0 step test-gpu_log_mel-blocks . "$bin/gpu_log_mel" --nocapture --test-threads=1 --skip emulated
# The plans with each form asked for alone (each step sets one form on,
# whatever its default: where test-plans-opt-ins fails, these say which).
# CUDA's four-step multi-pass FFT (DeviceLimits::four_step; on by default).
want test-plans-four-step && RLX_OPT_CUDA_FOUR_STEP=1 step test-plans-four-step . "$bin/plans" "${PLANS_ARGS[@]}"
# The one-pass entries' occupancy bound (lower::cuda::occupancy_bounds; off).
want test-plans-occupancy && RLX_OPT_CUDA_OCCUPANCY=1 step test-plans-occupancy . "$bin/plans" "${PLANS_ARGS[@]}"
# The one-pass top-k taken by warps in blocks of several warps
# (lower::cuda::SourceForms::warp_topk; off).
want test-plans-warp-topk && RLX_OPT_CUDA_WARP_TOPK=1 step test-plans-warp-topk . "$bin/plans" "${PLANS_ARGS[@]}"
# The one-pass FFT's first pass on the samples as loaded
# (lower::cuda::SourceForms::load_pass; on).
want test-plans-load-pass && RLX_OPT_CUDA_LOAD_PASS=1 step test-plans-load-pass . "$bin/plans" "${PLANS_ARGS[@]}"
# One-segment entries packed into half-length FFTs
# (DeviceLimits::packed_segment; on).
want test-plans-packed-segment && RLX_OPT_CUDA_PACKED_SEGMENT=1 step test-plans-packed-segment . "$bin/plans" "${PLANS_ARGS[@]}"
# The one-warp FFT in registers (lower::cuda::SourceForms::register_fft;
# on: it takes the load pass's place on grids of up to 1,024 blocks).
want test-plans-register-fft && RLX_OPT_CUDA_REGISTER_FFT=1 step test-plans-register-fft . "$bin/plans" "${PLANS_ARGS[@]}"
want test-gpu_log_mel && step test-gpu_log_mel . "$bin/gpu_log_mel" --nocapture --test-threads=1 --skip emulated
# The log-mel kernel's warp form asked for (a warp per frame,
# DeviceLimits::log_mel_warps; on by default), rlx-run's runtime and RLX's.
want test-gpu_log_mel-warps && RLX_OPT_CUDA_LOG_MEL_WARPS=1 step test-gpu_log_mel-warps . "$bin/gpu_log_mel" --nocapture --test-threads=1 --skip emulated
want test-log_mel_cuda_session-warps && RLX_OPT_CUDA_LOG_MEL_WARPS=1 step test-log_mel_cuda_session-warps rlx-ext "$bin/log_mel_cuda_session" --nocapture --test-threads=1
want test-cuda_session && step test-cuda_session rlx-ext "$bin/cuda_session" --nocapture --test-threads=1
# Inside RLX with the four-step multi-pass FFT asked for (rlx-ext plans
# with the same forms as rlx-run: DeviceLimits::with_cuda_opt_ins).
want test-cuda_session-four-step && RLX_OPT_CUDA_FOUR_STEP=1 step test-cuda_session-four-step rlx-ext "$bin/cuda_session" --nocapture --test-threads=1
# Inside RLX with one-segment entries packed asked for (a plan form, as four-step is).
want test-cuda_session-packed-segment && RLX_OPT_CUDA_PACKED_SEGMENT=1 step test-cuda_session-packed-segment rlx-ext "$bin/cuda_session" --nocapture --test-threads=1
# The log-mel op on its CUDA kernels in RLX's signature (rlx-ext's default
# since it passed on an H200).
want test-log_mel_cuda_session && step test-log_mel_cuda_session rlx-ext "$bin/log_mel_cuda_session" --nocapture --test-threads=1
want bench-roofline && ROOFLINE_OUT="$RESULTS" step bench-roofline . "$bin/bench-roofline" --bench cuda
# The CUDA FFT's pass grouping compared on the goal cells (Welch and
# log-mel): a stage a pass (4), the default (10), radix-16 passes (16).
for points in 4 10 16; do
  want ab-passes && RLX_OPT_CUDA_PASS_POINTS=$points ROOFLINE_CELLS=goal ROOFLINE_OUT="$RESULTS/ab-$points" step ab-passes-$points . "$bin/bench-roofline" --bench cuda
done
# Each A/B below runs a form off (0) and on (1) in turn, whatever its
# default (src/opt_in.rs says which is the default).
# The multi-pass plans' two FFT forms on their cells: radix-2 stage
# launches (0) against the four-step FFT (1).
for four_step in 0 1; do
  want ab-four-step && RLX_OPT_CUDA_FOUR_STEP=$four_step ROOFLINE_CELLS=multipass ROOFLINE_OUT="$RESULTS/four-step-$four_step" step ab-four-step-$four_step . "$bin/bench-roofline" --bench cuda
done
# The one-pass entries' launch bounds: (WG, 1) (0) against
# the occupancy bound (1): one-warp blocks bounded to 32 an SM, on the goal
# cells; blocks of several warps to 80 registers a thread, on the cells of
# 1024 and 4096 points (ROOFLINE_CELLS=topk).
for occupancy in 0 1; do
  want ab-occupancy && RLX_OPT_CUDA_OCCUPANCY=$occupancy ROOFLINE_CELLS=goal ROOFLINE_OUT="$RESULTS/occupancy-$occupancy" step ab-occupancy-$occupancy . "$bin/bench-roofline" --bench cuda
  want ab-occupancy && RLX_OPT_CUDA_OCCUPANCY=$occupancy ROOFLINE_CELLS=topk ROOFLINE_OUT="$RESULTS/occupancy-wide-$occupancy" step ab-occupancy-wide-$occupancy . "$bin/bench-roofline" --bench cuda
  want ab-occupancy && RLX_OPT_CUDA_OCCUPANCY=$occupancy step ab-occupancy-session-$occupancy rlx-ext "$bin/bench-session" --bench cuda
done
# The log-mel kernel's two forms on its cells: a block per frame (0)
# against a warp per frame (1).
for warps in 0 1; do
  want ab-log-mel-warps && RLX_OPT_CUDA_LOG_MEL_WARPS=$warps ROOFLINE_CELLS=log_mel ROOFLINE_OUT="$RESULTS/log-mel-warps-$warps" step ab-log-mel-warps-$warps . "$bin/bench-roofline" --bench cuda
done
# The one-pass top-k's two forms on the cells of several warps a block:
# k rounds of a block-wide maximum (0) against warps (1).
for warp_topk in 0 1; do
  want ab-warp-topk && RLX_OPT_CUDA_WARP_TOPK=$warp_topk ROOFLINE_CELLS=topk ROOFLINE_OUT="$RESULTS/warp-topk-$warp_topk" step ab-warp-topk-$warp_topk . "$bin/bench-roofline" --bench cuda
done
# The one-pass FFT with its first pass read back from shared memory (0)
# against run on the samples as loaded (1): the goal cells
# and the cells of 1024 and 4096 points.
for load_pass in 0 1; do
  want ab-load-pass && RLX_OPT_CUDA_LOAD_PASS=$load_pass ROOFLINE_CELLS=goal ROOFLINE_OUT="$RESULTS/load-pass-$load_pass" step ab-load-pass-$load_pass . "$bin/bench-roofline" --bench cuda
  want ab-load-pass && RLX_OPT_CUDA_LOAD_PASS=$load_pass ROOFLINE_CELLS=topk ROOFLINE_OUT="$RESULTS/load-pass-wide-$load_pass" step ab-load-pass-wide-$load_pass . "$bin/bench-roofline" --bench cuda
done
# One-segment entries: paired with zeros (0) against packed
# into a half-length FFT (1), on the one-segment cells.
for segment_packed in 0 1; do
  want ab-packed-segment && RLX_OPT_CUDA_PACKED_SEGMENT=$segment_packed ROOFLINE_CELLS=one_segment ROOFLINE_OUT="$RESULTS/packed-segment-$segment_packed" step ab-packed-segment-$segment_packed . "$bin/bench-roofline" --bench cuda
done
# The one-warp FFT through shared memory, with the load pass where it
# fits (0), against in the warp's registers where the rule gives it the
# kernel (1), on the one-warp cells (n_fft 64 and 256).
for register_fft in 0 1; do
  want ab-register-fft && RLX_OPT_CUDA_REGISTER_FFT=$register_fft ROOFLINE_CELLS=one_warp ROOFLINE_OUT="$RESULTS/register-fft-$register_fft" step ab-register-fft-$register_fft . "$bin/bench-roofline" --bench cuda
done
want bench-gpu && step bench-gpu . "$bin/bench-gpu" --bench cuda
want bench-session && step bench-session rlx-ext "$bin/bench-session" --bench cuda
want calibrate && step calibrate . "$bin/rlx-run" --calibrate --target=cuda -o "$RESULTS/cuda-profile.json"
# It calibrates RLX's CUDA session first: more than 200 s on an H100, so its
# step has 540 s unless FIDELITY_TIMEOUT says otherwise.
want bench-fidelity && STEP_TIMEOUT="${FIDELITY_TIMEOUT:-540}" RLX_OPT_FIDELITY_DIR="$RESULTS/fidelity" step bench-fidelity rlx-ext "$bin/bench-fidelity" --bench cuda
# Nsight Compute on the headline cell's one-pass kernel: what bounds it.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
want profile && ROOFLINE_CELLS=goal ROOFLINE_OUT=/tmp step profile . "$NCU" --set full --kernel-name welch_peaks --launch-skip 2 --launch-count 1 "$bin/bench-roofline" --bench cuda
# …and on the grid's slowest large cells (n_fft 4096 at 8 segments, 1024 at
# k 64), by default and with the occupancy bound: what bounds the FFT there.
for cell in 8192x8x4096x16 8192x8x1024x64; do
  for occupancy in 0 1; do
    want profile-wide && RLX_OPT_CUDA_OCCUPANCY=$occupancy ROOFLINE_CELLS=$cell ROOFLINE_OUT=/tmp step profile-$cell-$occupancy . "$NCU" --set full --kernel-name welch_peaks --launch-skip 2 --launch-count 1 "$bin/bench-roofline" --bench cuda
  done
done
# compute-sanitizer's racecheck on the log-mel kernel's warp form (shared
# memory between the lanes of a warp, __syncwarp hazards): its reference
# cases under the sanitizer (slow; not in `pending`).
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
want racecheck-log-mel-warps && RLX_OPT_CUDA_LOG_MEL_WARPS=1 step racecheck-log-mel-warps . "$SANITIZER" --tool racecheck --racecheck-report all --error-exitcode 1 "$bin/gpu_log_mel" cuda_log_mel_matches_the_reference --nocapture --test-threads=1
}
for ASKED in "${STEPS[@]}"; do
  MATCHED=0
  run_steps
  (( MATCHED )) || { echo "no step is called '$ASKED' (see the names in scripts/gpu-run.sh)" >&2; failed=1; }
done
echo "logs and results in $OUT/results.tgz"
exit $failed
