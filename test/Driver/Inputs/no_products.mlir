// A model without a product to quantize (precision_int8.mlir).
func.func @main(%x: tensor<4x8xf32> {kiln.name = "x"}) -> (tensor<4x8xf32> {kiln.name = "y"}) {
  %y = kiln.relu %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
