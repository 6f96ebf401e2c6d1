// Failures are MLIR diagnostics at the op concerned and a failed pass (exit
// code 1), never a crash.
// REQUIRES: mlir-plugin
// RUN: not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks{target=nope})' %s 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks{min-gain-ns=lots})' %s 2>&1 | FileCheck %s --check-prefix=NUMBER
// RUN: not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks{bogus=1})' %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks)' %s 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: env RLX_OPT_PLUGIN_FAULT=panic not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks)' %S/Inputs/valid.mlir 2>&1 | FileCheck %s --check-prefix=PANIC
// RUN: env RLX_OPT_PLUGIN_FAULT=garbage not mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks)' %S/Inputs/valid.mlir 2>&1 | FileCheck %s --check-prefix=GARBAGE

// OPTION: error: rlx-fuse-welch-peaks: unknown target `nope` (expected one of cpu, cuda, rocm, metal, mlx, wgpu, tpu)
// NUMBER: error: rlx-fuse-welch-peaks: option `min-gain-ns` of `fuse-welch-peaks` takes a number, got `lots`
// UNKNOWN: no such option bogus
// PANIC: error: rlx-fuse-welch-peaks: internal error (Rust panic: RLX_OPT_PLUGIN_FAULT=panic)
// GARBAGE: error: rlx-fuse-welch-peaks: cannot apply `N - a0

func.func @f(%a: tensor<4x8xf32>) -> tensor<4x4xindex> {
  // SHAPE: errors.mlir:[[@LINE+1]]:8: error: rlx-fuse-welch-peaks: result of `rlx.Narrow`: unknown element type `index`
  %0 = "rlx.Narrow"(%a) {axis = 1 : i64, start = 0 : i64, len = 4 : i64} : (tensor<4x8xf32>) -> tensor<4x4xindex>
  return %0 : tensor<4x4xindex>
}
