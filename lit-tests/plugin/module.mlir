// Several functions, a nested module and other dialects: every rlx function
// is rewritten in place, everything else is left as it was.
// REQUIRES: mlir-plugin
// RUN: mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks{target=cuda})' %s | FileCheck %s
// RUN: mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(builtin.module(rlx-fuse-welch-peaks{target=cuda}))' %s | FileCheck %s --check-prefix=NESTED
// RUN: mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks{target=cuda})' --mlir-print-ir-after-all %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-welch-peaks{target=cuda fusion-report=%t.json})' %s -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.json

module {
  // CHECK-LABEL: func.func @first
  // CHECK:       "rlx.Custom"(%arg0) {{.*}}name = "rlx_opt.welch_peaks"{{.*}} : (tensor<16x64xf32>) -> tensor<2x8xf32>
  // CHECK-NOT:   rlx.WelchPeaks
  // NESTED-LABEL: func.func @first
  // NESTED:       "rlx.WelchPeaks"
  func.func @first(%x: tensor<16x64xf32> {rlx.Input = {name = "segs"}, rlx.position = 0 : i64}) -> tensor<2x8xf32> {
    %0 = "rlx.Binary"(%x, %x) {rlx.value = "Sub"} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %1 = "rlx.Concat"(%x, %0) {axis = 1 : i64} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x128xf32>
    %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<16x128xf32>) -> tensor<16x128xf32>
    %3 = "rlx.WelchPeaks"(%2) {k = 4 : i64, n_segments = 8 : i64} : (tensor<16x128xf32>) -> tensor<2x8xf32> loc("first.peaks")
    return %3 : tensor<2x8xf32>
  }

  // CHECK-LABEL: func.func private @helper
  // CHECK-NEXT:  arith.addi %{{.*}}, %{{.*}} : i32
  // CHECK-NEXT:  "other.op"(%{{.*}}) {note = "kept"} : (i32) -> ()
  func.func private @helper(%a: i32) -> i32 attributes {llvm.emit_c_interface} {
    %0 = arith.addi %a, %a : i32
    "other.op"(%0) {note = "kept"} : (i32) -> ()
    return %0 : i32
  }

  // A declaration is left alone (rlx-opt refuses one: mlir/errors.mlir).
  // CHECK-LABEL: func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
  func.func private @declared(tensor<4xf32>) -> tensor<4xf32>

  // CHECK-LABEL: module @inner
  // CHECK:       func.func @second
  // CHECK:       "rlx.Custom"
  // CHECK-NOT:   rlx.WelchPeaks
  // NESTED-LABEL: module @inner
  // NESTED:       "rlx.Custom"
  module @inner attributes {inner.kept = 1 : i32} {
    func.func @second(%y: tensor<8x32xf32> {rlx.Input = {name = "y"}, rlx.position = 0 : i64}) -> (tensor<8x64xf32>, tensor<2x4xf32>) {
      %0 = "rlx.Binary"(%y, %y) {rlx.value = "Sub"} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
      %1 = "rlx.Concat"(%y, %0) {axis = 1 : i64} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x64xf32>
      %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<8x64xf32>) -> tensor<8x64xf32>
      %3 = "rlx.WelchPeaks"(%2) {k = 2 : i64, n_segments = 4 : i64} : (tensor<8x64xf32>) -> tensor<2x4xf32>
      return %2, %3 : tensor<8x64xf32>, tensor<2x4xf32>
    }
  }
}

// AFTER: // -----// IR Dump After RlxFuseWelchPeaks (rlx-fuse-welch-peaks) //----- //
// AFTER: "rlx.Custom"

// REPORT: "target": "cuda"
// REPORT: "decision": "fused"
