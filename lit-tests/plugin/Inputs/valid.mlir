func.func @f(%x: tensor<16x64xf32> {rlx.Input = {name = "segs"}, rlx.position = 0 : i64}) -> tensor<2x8xf32> {
  %0 = "rlx.Binary"(%x, %x) {rlx.value = "Sub"} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %1 = "rlx.Concat"(%x, %0) {axis = 1 : i64} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x128xf32>
  %2 = "rlx.Fft"(%1) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<16x128xf32>) -> tensor<16x128xf32>
  %3 = "rlx.WelchPeaks"(%2) {k = 4 : i64, n_segments = 8 : i64} : (tensor<16x128xf32>) -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}
