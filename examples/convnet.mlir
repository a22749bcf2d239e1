// A small CNN for 32x32 RGB images: two conv/bias/relu/max-pool stages, a
// flatten, a dense layer and a softmax (12 kernel calls), in memplan's
// value-semantic input form. `@flatten` is a view kernel (`memory.view`):
// `manifest-alloc` makes its result an alias of its input, with no storage.
// The first convolution's weights and the biases are constants (read-only
// globals, never workspace); the other weights arrive as arguments. Kernel
// parameters (strides, padding, pool size) are call attributes and end up
// on the `memory.invoke`s.
//
//   memplan-opt --plan --plan-report examples/convnet.mlir
//
// (`--plan` is `--manifest-alloc --insert-kills --coalesce --usmp
// --verify-plan`; planning passes alone on this form have nothing to plan
// and say so in a warning.)

func.func private @conv2d_3to8(tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x32x32xf32>
func.func private @bias_add_8(tensor<1x8x32x32xf32>, tensor<8xf32>) -> tensor<1x8x32x32xf32>
func.func private @relu_8(tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
func.func private @max_pool_8(tensor<1x8x32x32xf32>) -> tensor<1x8x16x16xf32>
func.func private @conv2d_8to16(tensor<1x8x16x16xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x16x16xf32>
func.func private @bias_add_16(tensor<1x16x16x16xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
func.func private @relu_16(tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
func.func private @max_pool_16(tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32>
func.func private @flatten(tensor<1x16x8x8xf32>) -> tensor<1x1024xf32> attributes {memory.view}
func.func private @dense_1024x10(tensor<1x1024xf32>, tensor<1024x10xf32>) -> tensor<1x10xf32>
func.func private @bias_add_10(tensor<1x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
func.func private @softmax_10(tensor<1x10xf32>) -> tensor<1x10xf32>

func.func @main(%image: tensor<1x3x32x32xf32>, %w2: tensor<16x8x3x3xf32>, %wd: tensor<1024x10xf32>) -> tensor<1x10xf32> {
  %w1 = arith.constant dense<0.05> : tensor<8x3x3x3xf32>
  %b1 = arith.constant dense<0.01> : tensor<8xf32>
  %b2 = arith.constant dense<0.02> : tensor<16xf32>
  %bd = arith.constant dense<0.0> : tensor<10xf32>
  %c1 = func.call @conv2d_3to8(%image, %w1) {strides = [1, 1], padding = [1, 1, 1, 1]} : (tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x32x32xf32>
  %a1 = func.call @bias_add_8(%c1, %b1) : (tensor<1x8x32x32xf32>, tensor<8xf32>) -> tensor<1x8x32x32xf32>
  %r1 = func.call @relu_8(%a1) : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
  %p1 = func.call @max_pool_8(%r1) {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x8x32x32xf32>) -> tensor<1x8x16x16xf32>
  %c2 = func.call @conv2d_8to16(%p1, %w2) {strides = [1, 1], padding = [1, 1, 1, 1]} : (tensor<1x8x16x16xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x16x16xf32>
  %a2 = func.call @bias_add_16(%c2, %b2) : (tensor<1x16x16x16xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
  %r2 = func.call @relu_16(%a2) : (tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %p2 = func.call @max_pool_16(%r2) {pool_size = [2, 2], strides = [2, 2]} : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32>
  %flat = func.call @flatten(%p2) : (tensor<1x16x8x8xf32>) -> tensor<1x1024xf32>
  %d = func.call @dense_1024x10(%flat, %wd) : (tensor<1x1024xf32>, tensor<1024x10xf32>) -> tensor<1x10xf32>
  %logits = func.call @bias_add_10(%d, %bd) : (tensor<1x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  %probs = func.call @softmax_10(%logits) {axis = 1 : i64} : (tensor<1x10xf32>) -> tensor<1x10xf32>
  func.return %probs : tensor<1x10xf32>
}
