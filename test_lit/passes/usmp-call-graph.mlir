// usmp plans a module's functions on one time line, a called function's
// storages in a segment at its first call. A function that allocates
// nothing, with all it calls (a shape function), gets no segment: calling
// it twice never makes two storages conflict.
// RUN: memplan-opt %s --usmp --verify-plan --split-input-file | filecheck %s

// @rows is called with %a live (first call) and again with %b live
// (second call); %a dies before %b is allocated. @rows has no storage, so
// %b is not widened over the first call: %b takes %a's bytes at 0, and the
// pool is 64 bytes, the peak of live bytes (not 128).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @rows(%m: memref<16xf32>) -> index {
  %c0 = arith.constant 0 : index
  %n = memref.dim %m, %c0 : memref<16xf32>
  func.return %n : index
}
func.func @main(%x: memref<16xf32>) -> index {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  %n = func.call @rows(%ta) : (memref<16xf32>) -> index
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  %b = memory.alloc_storage : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%tb : memref<16xf32>)
  %m = func.call @rows(%tb) : (memref<16xf32>) -> index
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %b : !memory.storage<64>
  func.return %m : index
}
// CHECK:       memory.pool @workspace_cpu targets ["cpu"] used 64
// CHECK-LABEL: func.func @main
// CHECK:         %a = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>
// CHECK:         %b = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>

// -----

// A called function that allocates keeps its one segment, at its first
// call: a storage live across any call of it is widened over that segment.
// %b, live across the second call of @scratch, is widened over the first
// call, where %a is live: %a, %b and @scratch's %s all conflict, 192 bytes
// (the price of one static place for %s; the rule above spares only
// functions that allocate nothing).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @scratch(%m: memref<16xf32>) {
  %s = memory.alloc_storage : !memory.storage<64>
  %ts = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%m : memref<16xf32>) outs(%ts : memref<16xf32>)
  memory.invoke @k ins(%ts : memref<16xf32>) outs(%m : memref<16xf32>)
  memory.kill %s : !memory.storage<64>
  func.return
}
func.func @main(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  func.call @scratch(%ta) : (memref<16xf32>) -> ()
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  %b = memory.alloc_storage : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%tb : memref<16xf32>)
  func.call @scratch(%tb) : (memref<16xf32>) -> ()
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %b : !memory.storage<64>
  func.return
}
// CHECK:       memory.pool @workspace_cpu targets ["cpu"] used 192
// CHECK-LABEL: func.func @scratch
// CHECK:         %s = memory.alloc_storage at @workspace_cpu[128] : !memory.storage<64>
// CHECK-LABEL: func.func @main
// CHECK:         %a = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>
// CHECK:         %b = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>
