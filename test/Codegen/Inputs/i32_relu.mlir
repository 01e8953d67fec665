// An i32 tensor reaching a kernel (kiln.transpose accepts any element type).
#loc_t = loc("transpose_int"("model.onnx":0:0))
func.func @main(%x: tensor<2x3xi32> {kiln.name = "x"}) -> (tensor<3x2xi32> {kiln.name = "y"}) {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xi32> -> tensor<3x2xi32> loc(#loc_t)
  return %t : tensor<3x2xi32>
}
