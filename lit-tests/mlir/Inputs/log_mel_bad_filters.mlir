// A LogMel whose filterbank has 10 bins where the spectrum has 9 (lit-tests/mlir/log_mel.mlir).
func.func @f(%frames: tensor<4x16xf32>, %filters: tensor<3x10xf32>) -> tensor<4x3xf32> {
  %0 = "rlx.Binary"(%frames, %frames) {rlx.value = "Sub"} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = "rlx.Concat"(%frames, %0) {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %3 = "rlx.LogMel"(%2, %filters) : (tensor<4x32xf32>, tensor<3x10xf32>) -> tensor<4x3xf32>
  return %3 : tensor<4x3xf32>
}
