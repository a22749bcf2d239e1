// RUN: memplan-opt %s --manifest-alloc --split-input-file | filecheck %s
// RUN: memplan-opt %s -p manifest-alloc,insert-kills,usmp --split-input-file | filecheck %s --check-prefix=USMP

// `memory.max_shapes` on a call bounds its dynamic results: %y is at most
// 1024 x 4-byte f32 = 4096 bytes, so its storage gets `max 4096` (the
// attribute is not copied to the invoke). %z has no bound: its storage has
// no `max`.
func.func private @grow(tensor<4xf32>, index) -> tensor<?xf32> attributes {memory.shape_fn = @grow_shape}
func.func private @grow_shape(tensor<4xf32>, index) -> index
func.func private @sum(tensor<?xf32>) -> tensor<4xf32>
func.func @bounded(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %y = func.call @grow(%x, %n) {memory.max_shapes = [array<i64: 1024>]} : (tensor<4xf32>, index) -> tensor<?xf32>
  %z = func.call @grow(%x, %n) : (tensor<4xf32>, index) -> tensor<?xf32>
  %s = func.call @sum(%y) : (tensor<?xf32>) -> tensor<4xf32>
  %t = func.call @sum(%z) : (tensor<?xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
// CHECK-LABEL: func.func @bounded
// CHECK:         %y_storage = memory.alloc_storage(%y_bytes) max 4096 : !memory.storage<?>
// CHECK:         memory.invoke @grow ins(%x, %n : memref<4xf32>, index) outs(%y : memref<?xf32>)
// CHECK:         %z_storage = memory.alloc_storage(%z_bytes) : !memory.storage<?>

// usmp pins the bounded storage at a static offset reserving its 4096
// bytes; %s (16 bytes, live with it) goes above, at 4096, and %t reuses
// offset 0 once %y is dead: 4112 bytes in all. The unbounded %z_storage is
// left to a run-time allocation.
// USMP:         memory.pool @workspace_cpu targets ["cpu"] used 4112
// USMP-LABEL:   func.func @bounded
// USMP:         %y_storage = memory.alloc_storage(%y_bytes) max 4096 at @workspace_cpu[0] : !memory.storage<?>
// USMP:         %z_storage = memory.alloc_storage(%z_bytes) : !memory.storage<?>
// USMP:         %s_storage = memory.alloc_storage at @workspace_cpu[4096] : !memory.storage<16>
// USMP:         %t_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<16>
