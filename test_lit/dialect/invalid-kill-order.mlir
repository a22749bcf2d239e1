// RUN: memplan-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// The path checks of `memory.kill` (memdialect/kill_order.py): a use or a
// second kill on some path after a kill. They are the dialect's, checked
// once per module rather than by the kill's op verifier (xDSL 0.74's blocks
// keep no op order, so a verifier per kill would be quadratic): memplan-opt
// and every memplan tool run them, plain xdsl-opt does not
// (docs/known-limits.md).

// No use after a kill.
func.func private @read(memref<16xf32>)
func.func @use_after_kill() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memory.kill %t : memref<16xf32>
  memory.invoke @read ins(%t : memref<16xf32>)
  func.return
}
// CHECK: %t is used by memory.invoke after its kill

// -----

// Killing a storage ends its tensors and their views too.
func.func private @read(memref<4x4xf32>)
func.func @view_after_storage_kill() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  %v = memref.expand_shape %t [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  memory.kill %s : !memory.storage<64>
  memory.invoke @read ins(%v : memref<4x4xf32>)
  func.return
}
// CHECK: %v (a view of %s) is used by memory.invoke after its kill

// -----

// A use in a block reached after the kill is a use after kill.
func.func private @read(memref<16xf32>)
func.func @use_after_kill_cfg() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memory.kill %t : memref<16xf32>
  cf.br ^next
^next:
  memory.invoke @read ins(%t : memref<16xf32>)
  func.return
}
// CHECK: %t is used by memory.invoke after its kill

// -----

// Killing twice on one path.
func.func @double_kill() {
  %s = memory.alloc_storage : !memory.storage<64>
  memory.kill %s : !memory.storage<64>
  memory.kill %s : !memory.storage<64>
  func.return
}
// CHECK: %s is killed twice on one path

// -----

// A kill inside an scf.if branch is followed by the rest of the function.
func.func @double_kill_nested(%c : i1) {
  %s = memory.alloc_storage : !memory.storage<64>
  scf.if %c {
    memory.kill %s : !memory.storage<64>
  }
  memory.kill %s : !memory.storage<64>
  func.return
}
// CHECK: %s is killed twice on one path
