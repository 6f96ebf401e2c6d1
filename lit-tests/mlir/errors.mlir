// MLIR that MLIR accepts but rlx-opt cannot read as a graph: each error names
// file, line and column; exit code 1; no panic.
// RUN: not rlx-opt --split-input-file %s 2>&1 >/dev/null | FileCheck %s --implicit-check-not=panicked
// RUN: rlx-opt --split-input-file %s >/dev/null 2>&1; test $? -eq 1

// CHECK: errors.mlir:[[@LINE+1]]:14: error: argument %a: unknown element type `f8E4M3FN` (rlx-opt reads f32, f16, bf16, f64, i1, i8, i16, i32, i64, ui8, ui32, complex<f32>, complex<f64>)
func.func @f(%a: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  %0 = "rlx.Activation"(%a) {rlx.value = "Relu"} : (tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

func.func @g(%a: tensor<4xf32>) -> tensor<4xindex> {
  // CHECK: errors.mlir:[[@LINE+1]]:3: error: result of `rlx.Activation`: unknown element type `index`
  %0 = "rlx.Activation"(%a) {rlx.value = "Relu"} : (tensor<4xf32>) -> tensor<4xindex>
  return %0 : tensor<4xindex>
}

// -----

func.func @h(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: errors.mlir:[[@LINE+1]]:3: error: `arith.negf` is not an rlx op: rlx-opt reads functions of rlx.* ops
  %0 = "arith.negf"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @i(%a: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // CHECK: errors.mlir:[[@LINE+1]]:3: error: `rlx.Narrow`: invalid `Narrow` op: missing field `len`
  %0 = "rlx.Narrow"(%a) {axis = 1 : i64, start = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @j(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: errors.mlir:[[@LINE+1]]:3: error: `rlx.Activation`: attribute `rlx.value`: unsupported attribute kind
  %0 = "rlx.Activation"(%a) {rlx.value = affine_map<(d0) -> (d0)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The graph verifier still runs on what was read.
func.func @k(%a: tensor<4x8xf32>) -> tensor<4x4xf32> {
  // CHECK: errors.mlir:[[@LINE+1]]:3: error: `Narrow` op %1: window 6..6+4 exceeds axis 1 of extent 8
  %0 = "rlx.Narrow"(%a) {axis = 1 : i64, start = 6 : i64, len = 4 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Valid MLIR this reader does not support says so: a type alias,
!t = tensor<4xf32>
// CHECK: errors.mlir:[[@LINE+1]]:14: error: argument %a: `!t` is a type alias, which rlx-opt does not expand (not supported): write the type in place
func.func @l(%a: !t) -> !t {
  %0 = "rlx.Activation"(%a) {rlx.value = "Relu"} : (!t) -> !t
  return %0 : !t
}

// -----

// a constant whose data is a resource,
func.func @m(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: errors.mlir:[[@LINE+1]]:3: error: `rlx.Constant`: attribute `value`: dense_resource elements are not supported (their data lives in the file's dialect_resources): write the constant as dense<…>
  %c = "rlx.Constant"() {value = dense_resource<blob1> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "rlx.Binary"(%a, %c) {rlx.value = "Add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000000803F0000803F0000803F0000803F"
    }
  }
#-}

// -----

// and a function declaration, custom form or generic (in the plugin such
// a function is left alone: plugin/module.mlir).
// CHECK: errors.mlir:[[@LINE+1]]:1: error: function declarations (no body) are not supported: rlx-opt reads functions of rlx.* ops, each a graph
func.func private @ext(tensor<4xf32> {rlx.note = 1 : i64}, tensor<2xf32>) -> tensor<4xf32>

// -----

// CHECK: errors.mlir:[[@LINE+1]]:1: error: function declarations (no body) are not supported
"func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "ext", sym_visibility = "private"}> ({
}) : () -> ()
