// RUN: not memplan-opt %s --manifest-alloc --split-input-file 2>&1 | filecheck %s

// One bound per result: @grow has one result, the call gives two shapes.
// CHECK: manifest-alloc-bounds-invalid.mlir:[[# @LINE + 4]]:3: error: call to @grow: memory.max_shapes must be an array of 1 array<i64: ...> shapes (one per result), got [array<i64: 8>, array<i64: 8>]
func.func private @grow(tensor<4xf32>, index) -> tensor<?xf32> attributes {memory.shape_fn = @grow_shape}
func.func private @grow_shape(tensor<4xf32>, index) -> index
func.func @two_bounds(%x: tensor<4xf32>, %n: index) -> tensor<?xf32> {
  %y = func.call @grow(%x, %n) {memory.max_shapes = [array<i64: 8>, array<i64: 8>]} : (tensor<4xf32>, index) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// -----

// A bound of the wrong rank.
// CHECK: error: call to @grow: memory.max_shapes #0 is array<i64: 8, 8>: it must be an array<i64: ...> of 1 non-negative dims, equal to the static dims of the result type tensor<?xf32>
func.func private @grow(tensor<4xf32>, index) -> tensor<?xf32> attributes {memory.shape_fn = @grow_shape}
func.func private @grow_shape(tensor<4xf32>, index) -> index
func.func @wrong_rank(%x: tensor<4xf32>, %n: index) -> tensor<?xf32> {
  %y = func.call @grow(%x, %n) {memory.max_shapes = [array<i64: 8, 8>]} : (tensor<4xf32>, index) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// -----

// A static dim of the bound must equal the type's (16, not 8).
// CHECK: error: call to @grow2: memory.max_shapes #0 is array<i64: 8, 8>: it must be an array<i64: ...> of 2 non-negative dims, equal to the static dims of the result type tensor<?x16xf32>
func.func private @grow2(tensor<4xf32>, index) -> tensor<?x16xf32> attributes {memory.shape_fn = @grow_shape}
func.func private @grow_shape(tensor<4xf32>, index) -> index
func.func @static_dim(%x: tensor<4xf32>, %n: index) -> tensor<?x16xf32> {
  %y = func.call @grow2(%x, %n) {memory.max_shapes = [array<i64: 8, 8>]} : (tensor<4xf32>, index) -> tensor<?x16xf32>
  func.return %y : tensor<?x16xf32>
}
