// Log-mel chains written in MLIR, fused by rlx-opt from .mlir input: as a
// flag, in --pass-pipeline beside fuse-welch-peaks, and back through MLIR.
// (Built with the `mlir` feature, MLIR prints the attrs' quotes as \22.)
// RUN: rlx-opt --fuse-log-mel %s | FileCheck %s
// RUN: rlx-opt --fuse-log-mel --fusion-report=- %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT
// RUN: rlx-opt --pass-pipeline='fuse-log-mel{target=cpu},fuse-welch-peaks{target=cuda}' --emit=mlir %s | FileCheck %s --check-prefix=BOTH
// The fused MLIR reads back as the fused graph, and fusing it again changes nothing.
// RUN: rlx-opt --fuse-log-mel %s -o %t.want
// RUN: rlx-opt --fuse-log-mel --emit=mlir %s -o %t.mlir
// RUN: rlx-opt %t.mlir -o %t.got
// RUN: diff %t.want %t.got
// RUN: rlx-opt --fuse-log-mel %t.mlir -o %t.again
// RUN: diff %t.want %t.again
// A filterbank that does not fit the spectrum is the graph verifier's error, at its op.
// RUN: not rlx-opt --fuse-log-mel %S/Inputs/log_mel_bad_filters.mlir 2>&1 | FileCheck %s --check-prefix=FILTERS

// Whisper's geometry: n_fft 400, 80 mels, the filterbank an argument.
// CHECK-LABEL: graph @whisper {
// CHECK-NEXT:    %0 = {"Input":{"name":"frames"}} : [30, 400] f32
// CHECK-NEXT:    %4 = {"Input":{"name":"mel_filters"}} : [80, 201] f32
// CHECK-NEXT:    %5 = {"Custom":{"name":"rlx_opt.log_mel","num_inputs":2,"attrs":[{{[0-9,]+}}]}}(%0, %4) : [30, 80] f32
// CHECK-NEXT:    return %5
// BOTH-LABEL: sym_name = "whisper"
// BOTH:       "rlx.Custom"(%{{.*}}, %{{.*}}) {attrs = "{{.*}}n_fft{{\\(22|")}}:400{{.*}}n_mels{{\\(22|")}}:80{{.*}}", name = "rlx_opt.log_mel", num_inputs = 2 : i64} : (tensor<30x400xf32>, tensor<80x201xf32>) -> tensor<30x80xf32>
// BOTH-NOT:   rlx.LogMel
func.func @whisper(%frames: tensor<30x400xf32> {rlx.Input = {name = "frames"}, rlx.position = 0 : i64}, %filters: tensor<80x201xf32> {rlx.Input = {name = "mel_filters"}, rlx.position = 4 : i64}) -> tensor<30x80xf32> {
  %0 = "rlx.Binary"(%frames, %frames) {rlx.value = "Sub"} : (tensor<30x400xf32>, tensor<30x400xf32>) -> tensor<30x400xf32>
  %1 = "rlx.Concat"(%frames, %0) {axis = 1 : i64} : (tensor<30x400xf32>, tensor<30x400xf32>) -> tensor<30x800xf32>
  %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<30x800xf32>) -> tensor<30x800xf32>
  %3 = "rlx.LogMel"(%2, %filters) : (tensor<30x800xf32>, tensor<80x201xf32>) -> tensor<30x80xf32>
  return %3 : tensor<30x80xf32>
}

// A constant window multiplied into the frames: the op's third operand.
// CHECK-LABEL: graph @windowed {
// CHECK:         %7 = {"Custom":{"name":"rlx_opt.log_mel","num_inputs":3,"attrs":[{{[0-9,]+}}]}}(%0, %6, %1) : [2, 2] f32
// CHECK-NEXT:    return %7
// BOTH-LABEL: sym_name = "windowed"
// BOTH:       "rlx.Custom"(%{{.*}}, %{{.*}}, %{{.*}}) {attrs = "{{.*}}window{{\\(22|")}}:true{{.*}}", name = "rlx_opt.log_mel", num_inputs = 3 : i64} : (tensor<2x8xf32>, tensor<2x5xf32>, tensor<8xf32>) -> tensor<2x2xf32>
// BOTH-NOT:   rlx.LogMel
func.func @windowed(%frames: tensor<2x8xf32> {rlx.Input = {name = "frames"}, rlx.position = 0 : i64}, %filters: tensor<2x5xf32> {rlx.Input = {name = "mel_filters"}, rlx.position = 6 : i64}) -> tensor<2x2xf32> {
  %0 = "rlx.Constant"() {value = dense<[0.000000e+00, 0.146446615, 5.000000e-01, 0.853553414, 1.000000e+00, 0.853553295, 5.000000e-01, 0.146446496]> : tensor<8xf32>} : () -> tensor<8xf32>
  %1 = "rlx.Binary"(%frames, %0) {rlx.value = "Mul"} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %2 = "rlx.Binary"(%1, %1) {rlx.value = "Sub"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %3 = "rlx.Concat"(%1, %2) {axis = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
  %4 = "rlx.Fft"(%3) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %5 = "rlx.LogMel"(%4, %filters) : (tensor<2x16xf32>, tensor<2x5xf32>) -> tensor<2x2xf32>
  return %5 : tensor<2x2xf32>
}

// A window that is an argument is a near miss, said in the report.
// CHECK-LABEL: graph @window_argument {
// CHECK:         LogMel(
// BOTH-LABEL: sym_name = "window_argument"
// BOTH:       "rlx.LogMel"
// REPORT: window_argument{{ +}}log_mel{{.*}}not_matched{{.*}}the window of %2 is not a constant
func.func @window_argument(%frames: tensor<4x16xf32> {rlx.Input = {name = "frames"}, rlx.position = 0 : i64}, %window: tensor<16xf32> {rlx.Input = {name = "window"}, rlx.position = 1 : i64}, %filters: tensor<3x9xf32> {rlx.Input = {name = "mel_filters"}, rlx.position = 6 : i64}) -> tensor<4x3xf32> {
  %0 = "rlx.Binary"(%frames, %window) {rlx.value = "Mul"} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.Binary"(%0, %0) {rlx.value = "Sub"} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = "rlx.Concat"(%0, %1) {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %3 = "rlx.Fft"(%2) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %4 = "rlx.LogMel"(%3, %filters) : (tensor<4x32xf32>, tensor<3x9xf32>) -> tensor<4x3xf32>
  return %4 : tensor<4x3xf32>
}

// The spectrum is also a result: it stays, the log-mel is fused beside it.
// CHECK-LABEL: graph @spectrum_kept {
// CHECK:         %3 = {"Fft":{"inverse":false,"norm":"Backward","algo":"Native"}}(%2) : [4, 32] f32
// CHECK:         %5 = {"Custom":{"name":"rlx_opt.log_mel",{{.*}}(%0, %4) : [4, 3] f32
// CHECK-NEXT:    return %3, %5
// BOTH-LABEL: sym_name = "spectrum_kept"
// BOTH:       "rlx.Fft"
// BOTH:       name = "rlx_opt.log_mel"
// BOTH-NOT:   rlx.LogMel
// REPORT: spectrum_kept{{ +}}log_mel{{.*}}fused{{.*}}3 node(s) of the chain stay for other users
func.func @spectrum_kept(%frames: tensor<4x16xf32> {rlx.Input = {name = "frames"}, rlx.position = 0 : i64}, %filters: tensor<3x9xf32> {rlx.Input = {name = "mel_filters"}, rlx.position = 4 : i64}) -> (tensor<4x32xf32>, tensor<4x3xf32>) {
  %0 = "rlx.Binary"(%frames, %frames) {rlx.value = "Sub"} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.Concat"(%frames, %0) {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %3 = "rlx.LogMel"(%2, %filters) : (tensor<4x32xf32>, tensor<3x9xf32>) -> tensor<4x3xf32>
  return %2, %3 : tensor<4x32xf32>, tensor<4x3xf32>
}

// A Welch-peaks chain: fuse-log-mel leaves it, the pipeline's second pass fuses it.
// CHECK-LABEL: graph @welch {
// CHECK:         WelchPeaks
// BOTH-LABEL: sym_name = "welch"
// BOTH:       "rlx.Custom"(%{{.*}}) {attrs = "{{.*}}", name = "rlx_opt.welch_peaks", num_inputs = 1 : i64{{.*}}} : (tensor<16x64xf32>) -> tensor<2x8xf32>
// BOTH-NOT:   rlx.WelchPeaks
func.func @welch(%x: tensor<16x64xf32> {rlx.Input = {name = "segs"}, rlx.position = 0 : i64}) -> tensor<2x8xf32> {
  %0 = "rlx.Binary"(%x, %x) {rlx.value = "Sub"} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %1 = "rlx.Concat"(%x, %0) {axis = 1 : i64} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x128xf32>
  %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<16x128xf32>) -> tensor<16x128xf32>
  %3 = "rlx.WelchPeaks"(%2) {k = 4 : i64, n_segments = 8 : i64} : (tensor<16x128xf32>) -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}

// FILTERS: log_mel_bad_filters.mlir:6:3: error: `LogMel` op %5: filters have 10 bins but a spectrum of width 32 has 9
