// rlx-fuse-log-mel in stock mlir-opt: log-mel chains fused in place, alone or
// in one pipeline with rlx-fuse-welch-peaks; every other op left as it was.
// REQUIRES: mlir-plugin
// RUN: mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel{target=cpu})' %s | FileCheck %s
// RUN: mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel{target=cpu},rlx-fuse-welch-peaks{target=cuda})' %s | FileCheck %s --check-prefix=BOTH
// RUN: mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel{target=cpu},rlx-fuse-welch-peaks{target=cuda})' --mlir-print-ir-after-all %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: mlir-opt --allow-unregistered-dialect --load-pass-plugin=%plugin --pass-pipeline='builtin.module(rlx-fuse-log-mel{target=cpu fusion-report=%t.json})' %s -o /dev/null
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// The plugin fuses what rlx-opt fuses, graph for graph:
// RUN: python3 %S/Inputs/compare.py %plugin --pass=fuse-log-mel %fixtures/log_mel_*.graph %fixtures/spectrum_feeds_logmel.graph \
// RUN:   -- target=cpu target=cuda target=wgpu "target=wgpu force=true" "target=cpu model=corrected min-gain-ns=0" "target=cpu native-kernels=false" "profile=%profiles/cpu.json"

module {
  // CHECK-LABEL: func.func @whisper
  // CHECK:       "rlx.Custom"(%arg0, %arg1) {attrs = "{{.*}}\22n_fft\22:400{{.*}}\22n_mels\22:80{{.*}}", name = "rlx_opt.log_mel", num_inputs = 2 : i64} : (tensor<30x400xf32>, tensor<80x201xf32>) -> tensor<30x80xf32>
  // CHECK-NOT:   rlx.LogMel
  func.func @whisper(%frames: tensor<30x400xf32> {rlx.Input = {name = "frames"}, rlx.position = 0 : i64}, %filters: tensor<80x201xf32> {rlx.Input = {name = "mel_filters"}, rlx.position = 4 : i64}) -> tensor<30x80xf32> {
    %0 = "rlx.Binary"(%frames, %frames) {rlx.value = "Sub"} : (tensor<30x400xf32>, tensor<30x400xf32>) -> tensor<30x400xf32>
    %1 = "rlx.Concat"(%frames, %0) {axis = 1 : i64} : (tensor<30x400xf32>, tensor<30x400xf32>) -> tensor<30x800xf32>
    %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<30x800xf32>) -> tensor<30x800xf32>
    %3 = "rlx.LogMel"(%2, %filters) : (tensor<30x800xf32>, tensor<80x201xf32>) -> tensor<30x80xf32> loc("whisper.mel")
    return %3 : tensor<30x80xf32>
  }

  // CHECK-LABEL: func.func @windowed
  // CHECK:       %[[W:.*]] = "rlx.Constant"() {value = dense<
  // CHECK:       "rlx.Custom"(%arg0, %arg1, %[[W]]) {attrs = "{{.*}}\22window\22:true{{.*}}", name = "rlx_opt.log_mel", num_inputs = 3 : i64}
  // CHECK-NOT:   rlx.LogMel
  func.func @windowed(%frames: tensor<2x8xf32> {rlx.Input = {name = "frames"}, rlx.position = 0 : i64}, %filters: tensor<2x5xf32> {rlx.Input = {name = "mel_filters"}, rlx.position = 6 : i64}) -> tensor<2x2xf32> {
    %0 = "rlx.Constant"() {value = dense<[0.000000e+00, 0.146446615, 5.000000e-01, 0.853553414, 1.000000e+00, 0.853553295, 5.000000e-01, 0.146446496]> : tensor<8xf32>} : () -> tensor<8xf32>
    %1 = "rlx.Binary"(%frames, %0) {rlx.value = "Mul"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %2 = "rlx.Binary"(%1, %1) {rlx.value = "Sub"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    %3 = "rlx.Concat"(%1, %2) {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
    %4 = "rlx.Fft"(%3) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<2x16xf32>) -> tensor<2x16xf32>
    %5 = "rlx.LogMel"(%4, %filters) : (tensor<2x16xf32>, tensor<2x5xf32>) -> tensor<2x2xf32>
    return %5 : tensor<2x2xf32>
  }

  // CHECK-LABEL: func.func private @helper
  // CHECK-NEXT:  arith.addi %{{.*}}, %{{.*}} : i32
  // CHECK-NEXT:  "other.op"(%{{.*}}) {note = "kept"} : (i32) -> ()
  func.func private @helper(%a: i32) -> i32 {
    %0 = arith.addi %a, %a : i32
    "other.op"(%0) {note = "kept"} : (i32) -> ()
    return %0 : i32
  }

  // rlx-fuse-log-mel leaves a Welch-peaks chain; the pipeline's second pass fuses it.
  // CHECK-LABEL: module @inner
  // CHECK:       "rlx.WelchPeaks"
  // BOTH-LABEL:  module @inner
  // BOTH:        name = "rlx_opt.log_mel"
  // BOTH:        name = "rlx_opt.welch_peaks"
  // BOTH-NOT:    rlx.WelchPeaks
  // BOTH-NOT:    rlx.LogMel
  module @inner {
    func.func @both(%x: tensor<16x64xf32> {rlx.Input = {name = "segs"}, rlx.position = 0 : i64}, %filters: tensor<4x33xf32> {rlx.Input = {name = "mel_filters"}, rlx.position = 4 : i64}) -> (tensor<16x4xf32>, tensor<2x8xf32>) {
      %0 = "rlx.Binary"(%x, %x) {rlx.value = "Sub"} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
      %1 = "rlx.Concat"(%x, %0) {axis = 1 : i64} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x128xf32>
      %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<16x128xf32>) -> tensor<16x128xf32>
      %3 = "rlx.LogMel"(%2, %filters) : (tensor<16x128xf32>, tensor<4x33xf32>) -> tensor<16x4xf32>
      %4 = "rlx.WelchPeaks"(%2) {k = 4 : i64, n_segments = 8 : i64} : (tensor<16x128xf32>) -> tensor<2x8xf32>
      return %3, %4 : tensor<16x4xf32>, tensor<2x8xf32>
    }
  }
}

// AFTER: // -----// IR Dump After RlxFuseLogMel (rlx-fuse-log-mel) //----- //
// AFTER: "rlx.Custom"
// AFTER: // -----// IR Dump After RlxFuseWelchPeaks (rlx-fuse-welch-peaks) //----- //

// REPORT: "form": "log_mel"
// REPORT: "target": "cpu"
// REPORT: "decision": "fused"
