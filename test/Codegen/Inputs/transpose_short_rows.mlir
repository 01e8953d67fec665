func.func @main(%x: tensor<2x3x6x20xf32> {kiln.name = "x"}) -> (tensor<2x6x20x3xf32> {kiln.name = "y"}) {
  %y = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<2x3x6x20xf32> -> tensor<2x6x20x3xf32>
  return %y : tensor<2x6x20x3xf32>
}
