"builtin.module"() ({
  "func.func"() <{arg_attrs = [{rlx.Input = {name = "frames"}, rlx.position = 0 : i64}], function_type = (tensor<3x2x8xf32>) -> (tensor<5x2xf32>, tensor<5x2xf32>), sym_name = "near_topk_other_axis"}> ({
  ^bb0(%0: tensor<3x2x8xf32> loc("frames"("tests/fixtures/near_topk_other_axis.graph":3:8))):
    %1 = "rlx.Binary"(%0, %0) {rlx.value = "Sub"} : (tensor<3x2x8xf32>, tensor<3x2x8xf32>) -> tensor<3x2x8xf32> loc("tests/fixtures/near_topk_other_axis.graph":4:8)
    %2 = "rlx.Concat"(%0, %1) {axis = 2 : i64} : (tensor<3x2x8xf32>, tensor<3x2x8xf32>) -> tensor<3x2x16xf32> loc("tests/fixtures/near_topk_other_axis.graph":5:8)
    %3 = "rlx.Fft"(%2) {invealgo = "Native", inverse = false, norm = "Backward"} : (tensor<3x2x16xf32>) -> tensor<3x2x16xf32> loc("tests/fixtures/near_topk_other_axis.graph":6:8)
    %4 = "rlx.Narrow"(%3) {axis = 2 : i64, len = 5 : i64, start = 0 : i64} : (tensor<3x2x16xf32>) -> tensor<3x2x5xf32> loc("tests/fixtures/near_topk_other_axis.graph":7:8)
    %5 = "rlx.Narrow"(%3) {axis = 2 : i64, len = 5 : i64, start = 8 : i64} : (tensor<3x2x16xf32>) -> tensor<3x2x5xf32> loc("tests/fixtures/near_topk_other_axis.graph":8:8)
    %6 = "rlx.Binary"(%4, %4) {rlx.value = "Mul"} : (tensor<3x2x5xf32>, tensor<3x2x5xf32>) -> tensor<3x2x5xf32> loc("tests/fixtures/near_topk_other_axis.graph":9:8)
    %7 = "rlx.Binary"(%5, %5) {rlx.value = "Mul"} : (tensor<3x2x5xf32>, tensor<3x2x5xf32>) -> tensor<3x2x5xf32> loc("tests/fixtures/near_topk_other_axis.graph":10:8)
    %8 = "rlx.Binary"(%6, %7) {rlx.value = "Add"} : (tensor<3x2x5xf32>, tensor<3x2x5xf32>) -> tensor<3x2x5xf32> loc("tests/fixtures/near_topk_other_axis.graph":11:8)
    %9 = "rlx.Reduce"(%8) {axes = array<i64: 0>, keep_dim = false, op = "Mean"} : (tensor<3x2x5xf32>) -> tensor<2x5xf32> loc("tests/fixtures/near_topk_other_axis.graph":12:8)
    %12 = "rlx.Transpose"(%9) {perm = array<i64: 1, 0>, rlx.id = 11 : i64} : (tensor<2x5xf32>) -> tensor<5x2xf32> loc("tests/fixtures/near_topk_other_axis.graph":13:9)
    %10 = "rlx.TopK"(%12) {k = 2 : i64, rlx.id = 10 : i64} : (tensor<5x2xf32>) -> tensor<5x2xf32> loc("tests/fixtures/near_topk_other_axis.graph":14:9)
    %11 = "rlx.GatherElements"(%12, %10) {axis = 1 : i64} : (tensor<5x2xf32>, tensor<5x2xf32>) -> tensor<5x2xf32> loc("tests/fixtures/near_topk_other_axis.graph":15:9)
    "func.return"(%10, %11) : (tensor<5x2xf32>, tensor<5x2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
