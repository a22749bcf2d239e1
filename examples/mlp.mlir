// A two-layer perceptron, 256 -> 128 -> 10, in memplan's value-semantic input
// form: kernels are bodiless `func.func` declarations (one per fused operator
// and shape, as a compiler's lowering would emit them) and `@main` calls them
// on tensors. `memplan-opt --manifest-alloc` turns every call into a storage,
// a tensor and a destination-passing `memory.invoke`; the weights arrive as
// arguments, the biases are constants (read-only globals, never workspace).
//
//   memplan-opt --plan --plan-report examples/mlp.mlir
//
// (`--plan` is `--manifest-alloc --insert-kills --coalesce --usmp
// --verify-plan`; planning passes alone on this form have nothing to plan
// and say so in a warning.)

func.func private @dense_256x128(tensor<1x256xf32>, tensor<256x128xf32>) -> tensor<1x128xf32>
func.func private @bias_add_128(tensor<1x128xf32>, tensor<128xf32>) -> tensor<1x128xf32>
func.func private @relu_128(tensor<1x128xf32>) -> tensor<1x128xf32>
func.func private @dense_128x10(tensor<1x128xf32>, tensor<128x10xf32>) -> tensor<1x10xf32>
func.func private @bias_add_10(tensor<1x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
func.func private @softmax_10(tensor<1x10xf32>) -> tensor<1x10xf32>

func.func @main(%x: tensor<1x256xf32>, %w0: tensor<256x128xf32>, %w1: tensor<128x10xf32>) -> tensor<1x10xf32> {
  %b0 = arith.constant dense<0.01> : tensor<128xf32>
  %b1 = arith.constant dense<[0.1, -0.1, 0.2, -0.2, 0.3, -0.3, 0.4, -0.4, 0.5, -0.5]> : tensor<10xf32>
  %h0 = func.call @dense_256x128(%x, %w0) : (tensor<1x256xf32>, tensor<256x128xf32>) -> tensor<1x128xf32>
  %h1 = func.call @bias_add_128(%h0, %b0) : (tensor<1x128xf32>, tensor<128xf32>) -> tensor<1x128xf32>
  %h2 = func.call @relu_128(%h1) : (tensor<1x128xf32>) -> tensor<1x128xf32>
  %h3 = func.call @dense_128x10(%h2, %w1) : (tensor<1x128xf32>, tensor<128x10xf32>) -> tensor<1x10xf32>
  %h4 = func.call @bias_add_10(%h3, %b1) : (tensor<1x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  %y = func.call @softmax_10(%h4) {axis = 1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32>
  func.return %y : tensor<1x10xf32>
}
