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

// -----

// The clobber check follows a double buffer: %it and %it_spare swap the two
// buffers each iteration, so the write of %it_spare never lands on the %it
// it reads, and %r (which may be %a) is not touched: %a was copied into the
// loop's first buffer. %b is carved over %cc for the declared pair (0, 1),
// and %cc is also operand 0, declared by (0, 0): an allowed overlap. %cc
// takes %a's bytes after %r's last read.
memory.pool @workspace_cpu targets ["cpu"]
func.func private @k0(memref<4xf32>, memref<4xf32>) -> ()
func.func private @use(memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
func.func private @mix2(memref<4xf32>, memref<4xf32>, memref<4xf32>) -> () attributes {memory.inplace = array<i64: 0, 0, 0, 1>}
func.func @double_buffer(%x: memref<4xf32>, %c: i1) -> (memref<4xf32>, memref<4xf32>) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %a_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<16>
  %a = memory.alloc_tensor %a_storage[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @k0 ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  %r = scf.if %c -> (memref<4xf32>) {
    scf.yield %a : memref<4xf32>
  } else {
    scf.yield %x : memref<4xf32>
  }
  %first = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<16>
  %buffer = memory.alloc_tensor %first[0] : !memory.storage<16> -> memref<4xf32>
  "memref.copy"(%a, %buffer) : (memref<4xf32>, memref<4xf32>) -> ()
  %second = memory.alloc_storage at @workspace_cpu[128] : !memory.storage<16>
  %spare = memory.alloc_tensor %second[0] : !memory.storage<16> -> memref<4xf32>
  %l, %0 = scf.for %i = %lb to %ub step %st iter_args(%it = %buffer, %it_spare = %spare) -> (memref<4xf32>, memref<4xf32>) {
    memory.invoke @k0 ins(%it : memref<4xf32>) outs(%it_spare : memref<4xf32>)
    scf.yield %it_spare, %it : memref<4xf32>, memref<4xf32>
  }
  %u_storage = memory.alloc_storage at @workspace_cpu[192] : !memory.storage<16>
  %u = memory.alloc_tensor %u_storage[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @use ins(%r, %l : memref<4xf32>, memref<4xf32>) outs(%u : memref<4xf32>)
  %c_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<16>
  %cc = memory.alloc_tensor %c_storage[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @k0 ins(%u : memref<4xf32>) outs(%cc : memref<4xf32>)
  %b = memory.alloc_tensor %c_storage[0] {memory.inplace_of = 1 : i64} : !memory.storage<16> -> memref<4xf32>
  memory.invoke @mix2 ins(%cc, %cc : memref<4xf32>, memref<4xf32>) outs(%b : memref<4xf32>)
  func.return %u, %b : memref<4xf32>, memref<4xf32>
}
// CHECK-LABEL: func.func @double_buffer
