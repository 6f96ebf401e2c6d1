// With the `mlir` feature, MLIR itself parses and verifies the log-mel chains
// of log_mel.mlir before fuse-log-mel (in --pass-pipeline beside
// fuse-welch-peaks) and prints the fused module, with locations; stock
// mlir-opt reads it, and it comes back as the same fused graph.
// REQUIRES: rlx-mlir
// REQUIRES: mlir-opt
// RUN: rlx-opt --pass-pipeline='fuse-log-mel{target=cpu},fuse-welch-peaks{target=cuda}' --emit=mlir %S/log_mel.mlir | FileCheck %s
// RUN: rlx-opt --fuse-log-mel %S/log_mel.mlir -o %t.want
// RUN: rlx-opt --fuse-log-mel --emit=mlir %S/log_mel.mlir | mlir-opt --allow-unregistered-dialect --mlir-print-debuginfo | rlx-opt - --input-format=mlir -o %t.got
// RUN: diff %t.want %t.got
// RUN: not rlx-opt --fuse-log-mel %s 2>&1 >/dev/null | FileCheck %s --check-prefix=VERIFIER --implicit-check-not=panicked

// CHECK-LABEL: sym_name = "whisper"
// CHECK:       "rlx.Custom"({{.*}}) {attrs = "{{.*}}\22n_fft\22:400{{.*}}", name = "rlx_opt.log_mel", num_inputs = 2 : i64} : (tensor<30x400xf32>, tensor<80x201xf32>) -> tensor<30x80xf32> loc(
// CHECK-LABEL: sym_name = "windowed"
// CHECK:       name = "rlx_opt.log_mel", num_inputs = 3 : i64
// CHECK-LABEL: sym_name = "window_argument"
// CHECK:       "rlx.LogMel"({{.*}}) : (tensor<4x32xf32>, tensor<3x9xf32>) -> tensor<4x3xf32> loc(
// CHECK-LABEL: sym_name = "welch"
// CHECK:       name = "rlx_opt.welch_peaks"
// CHECK:       #loc{{[0-9]*}} = loc("{{.*}}log_mel.mlir":{{[0-9]+}}:{{[0-9]+}})

// A log-mel function MLIR's verifier rejects: its result is returned as the wrong type.
func.func @f(%frames: tensor<4x16xf32>, %filters: tensor<3x9xf32>) -> tensor<4x3xf32> {
  %0 = "rlx.Binary"(%frames, %frames) {rlx.value = "Sub"} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.Concat"(%frames, %0) {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %3 = "rlx.LogMel"(%2, %filters) : (tensor<4x32xf32>, tensor<3x9xf32>) -> tensor<4x3xf32>
  // VERIFIER: log_mel_verified.mlir:[[@LINE+1]]:3: error: MLIR: type of return operand 0 ('tensor<4x32xf32>') doesn't match function result type ('tensor<4x3xf32>') in function @f
  return %2 : tensor<4x32xf32>
}
