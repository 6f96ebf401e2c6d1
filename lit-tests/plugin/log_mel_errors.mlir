// rlx-fuse-log-mel's failures are MLIR diagnostics that name it, at the op
// concerned, and a failed pass (exit code 1), never a crash.
// REQUIRES: mlir-plugin
// RUN: not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel{target=nope})' %s 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel{min-gain-ns=lots})' %s 2>&1 | FileCheck %s --check-prefix=NUMBER
// RUN: not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel)' %s 2>&1 | FileCheck %s --check-prefix=FILTERS
// In a pipeline of both, the error names the pass that failed.
// RUN: not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks{target=cuda},rlx-fuse-log-mel{force-plan=sideways})' %s 2>&1 | FileCheck %s --check-prefix=PLAN
// RUN: env RLX_OPT_PLUGIN_FAULT=panic not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel)' %S/Inputs/valid.mlir 2>&1 | FileCheck %s --check-prefix=PANIC
// RUN: env RLX_OPT_PLUGIN_FAULT=garbage not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel)' %S/Inputs/valid.mlir 2>&1 | FileCheck %s --check-prefix=GARBAGE

// OPTION: error: rlx-fuse-log-mel: unknown target `nope` (expected one of cpu, cuda, rocm, metal, mlx, wgpu, tpu)
// NUMBER: error: rlx-fuse-log-mel: option `min-gain-ns` of `fuse-log-mel` takes a number, got `lots`
// PLAN: error: rlx-fuse-log-mel: unknown plan `sideways`
// PANIC: error: rlx-fuse-log-mel: internal error (Rust panic: RLX_OPT_PLUGIN_FAULT=panic)
// GARBAGE: error: rlx-fuse-log-mel: cannot apply `N - a0

func.func @f(%frames: tensor<4x16xf32>, %filters: tensor<3x10xf32>) -> tensor<4x3xf32> {
  %0 = "rlx.Binary"(%frames, %frames) {rlx.value = "Sub"} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.Concat"(%frames, %0) {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  // FILTERS: log_mel_errors.mlir:[[@LINE+1]]:8: error: rlx-fuse-log-mel: `LogMel` op %5: filters have 10 bins but a spectrum of width 32 has 9
  %3 = "rlx.LogMel"(%2, %filters) : (tensor<4x32xf32>, tensor<3x10xf32>) -> tensor<4x3xf32>
  return %3 : tensor<4x3xf32>
}
