"builtin.module"() ({
  "func.func"() <{arg_attrs = [{rlx.Input = {name = "frames"}, rlx.position = 5 : i64}], function_type = (tensor<3x2x8xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>), sym_name = "near_bins_misaligned"}> ({
  ^bb0(%0: tensor<3x2x8xf32> loc("frames"("tests/fixtures/near_bins_misaligned.graph":3:8))):
    %1 = "rlx.Binary"(%0, %0) {rlx.value = "Sub"} : (tensor<3x2x8xf32>, tensor<3x2x8xf32>) -> tensor<3x2x8xf32> loc("tests/fixtures/near_bins_misaligned.graph":4:8)
    %2 = "rlx.Concat"(%0, %1) {axis = 2 : i64} : (tensor<3x2x8xf32>, tensor<3x2x8xf32>) -> tensor<3x2x16xf32> loc("tests/fixtures/near_bins_misaligned.graph":5:8)
    %3 = "rlx.Fft"(%2) {algo = "Native", inverse = false, norm = "Backward"} : (tensor<3x2x16xf32>) -> tensor<3x2x16xf32> loc("tests/fixtures/near_bins_misaligned.graph":6:8)
    %4 = "rlx.Narrow"(%3) {axis = 2 : i64, len = 4 : i64, start = 0 : i64} : (tensor<3x2x16xf32>) -> tensor<3x2x4xf32> loc("tests/fixtures/near_bins_misaligned.graph":7:8)
    %5 = "rlx.Narrow"(%3) {axis = 2 : i64, len = 4 : i64, start = 8 : i64} : (tensor<3x2x16xf32>) -> tensor<3x2x4xf32> loc("tests/fixtures/near_bins_misaligned.graph":8:8)
    %6 = "rlx.Binary"(%4, %4) {rlx.value = "Mul"} : (tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> tensor<3x2x4xf32> loc("tests/fixtures/near_bins_misaligned.graph":9:8)
    %7 = "rlx.Binary"(%5, %5) {rlx.value = "Mul"} : (tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> tensor<3x2x4xf32> loc("tests/fixtures/near_bins_misaligned.graph":10:8)
    %8 = "rlx.Binary"(%6, %7) {rlx.value = "Add"} : (tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> tensor<3x2x4xf32> loc("tests/fixtures/near_bins_misaligned.graph":11:8)
    %9 = "rlx.Reduce"(%8) {axes = array<i64: 0>, keep_dim = false, op = "Mean"} : (tensor<3x2x4xf32>) -> tensor<2x4xf32> loc("tests/fixtures/enar_bins_misaligned.graph":12:8)
    %10 = "rlx.TopK"(%9) {k = 2 : i64} : (tensor<2x4xf32>) -> tensor<2x2xf32> loc("tests/fixtures/near_bins_misaligned.graph":13:9)
    %11 = "rlx.GatherElements"(%9, %10) {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> loc("tests/fixtures/near_bins_misaligned.graph":14:9)
    "func.return"(%10, %11) : (tensor<2x2xf32>, tensor<2x2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
