// RUN: memplan-opt %s --verify-plan --split-input-file | filecheck %s
// RUN: memplan-opt %s --verify-plan='require-pinned=true' --split-input-file | filecheck %s

// Valid plans pass and the IR is unchanged. Here %a ([0, 3): killed at 3)
// and %b (allocated at 4) never live together, so both may sit at offset 0
// of @sram; %c overlaps both in time and sits above them at 64.
memory.pool @sram size 256
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @reuse(%x: memref<16xf32>) {
  %c = memory.alloc_storage at @sram[64] : !memory.storage<64>
  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.kill %a : !memory.storage<64>
  %b = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
  func.return
}
// CHECK-LABEL: func.func @reuse
// CHECK-NEXT:    %c = memory.alloc_storage at @sram[64] : !memory.storage<64>
// CHECK-NEXT:    %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
// CHECK:         %b = memory.alloc_storage at @sram[0] : !memory.storage<64>

// -----

// Storages in the two branches of one scf.if never conflict: both at 0.
memory.pool @sram size 64
func.func @branches(%c: i1) {
  scf.if %c {
    %s = memory.alloc_storage at @sram[0] : !memory.storage<64>
    scf.yield
  } else {
    %t = memory.alloc_storage at @sram[0] : !memory.storage<64>
    scf.yield
  }
  func.return
}
// CHECK-LABEL: func.func @branches
// CHECK:         %s = memory.alloc_storage at @sram[0]
// CHECK:         %t = memory.alloc_storage at @sram[0]

// -----

// Tensors of one storage may share bytes when their lifetimes do not meet:
// %t1 is last used at 2 ([1, 3)), %t2 is carved at 3.
memory.pool @sram size 64
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @tensors(%x: memref<16xf32>) {
  %s = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %t1 = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%t1 : memref<16xf32>)
  %t2 = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%t2 : memref<16xf32>)
  func.return
}
// CHECK-LABEL: func.func @tensors
// CHECK:         %t2 = memory.alloc_tensor %s[0]

// -----

// Functions run one after another, so their storages share a pool's bytes.
memory.pool @sram size 64
func.func @first() {
  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
  func.return
}
func.func @second() {
  %b = memory.alloc_storage at @sram[0] : !memory.storage<64>
  func.return
}
// CHECK-LABEL: func.func @first
// CHECK-LABEL: func.func @second

// -----

// A storage that is never written may be pinned in a read-only pool.
memory.pool @flash access ro
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @constant(%x: memref<16xf32>) {
  %w = memory.alloc_storage at @flash[0] : !memory.storage<64>
  %tw = memory.alloc_tensor %w[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%tw : memref<16xf32>) outs(%x : memref<16xf32>)
  func.return
}
// CHECK-LABEL: func.func @constant
