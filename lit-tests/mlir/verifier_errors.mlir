// With the `mlir` feature, MLIR's own parser and verifier check MLIR input
// first; their messages come through with the file's line and column.
// REQUIRES: rlx-mlir
// RUN: not rlx-opt --split-input-file %s 2>&1 >/dev/null | FileCheck %s --implicit-check-not=panicked

func.func @f(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // CHECK: verifier_errors.mlir:[[@LINE+1]]:3: error: MLIR: type of return operand 0 ('tensor<8xf32>') doesn't match function result type ('tensor<4xf32>') in function @f
  return %b : tensor<8xf32>
}

// -----

func.func @g(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: verifier_errors.mlir:[[@LINE+1]]:25: error: MLIR: use of undeclared SSA value name
  %0 = "rlx.Activation"(%zz) {rlx.value = "Relu"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: verifier_errors.mlir:[[@LINE+1]]:27: error: MLIR: expected non-function type
func.func @h(%a: tensor<4xfoo>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
