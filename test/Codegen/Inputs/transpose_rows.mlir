func.func @main(%x: tensor<2x20x5x7xf32> {kiln.name = "x"}) -> (tensor<2x5x7x20xf32> {kiln.name = "y"}) {
  %y = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<2x20x5x7xf32> -> tensor<2x5x7x20xf32>
  return %y : tensor<2x5x7x20xf32>
}
