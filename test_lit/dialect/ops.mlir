// RUN: MEMPLAN_ROUNDTRIP
// RUN: MEMPLAN_GENERIC_ROUNDTRIP

// Every op form of docs/dialect.md, pretty and generic. Defaults are elided when
// printed: `align 16` on pools, `align 64` and `on "cpu"` on storages.

// CHECK:       memory.pool @sram size 262144 targets ["cpu", "npu"]
// CHECK-NEXT:  memory.pool @flash access ro
// CHECK-NEXT:  memory.pool @dram align 64
// CHECK-NEXT:  memory.pool @dtcm size 4096 align 32 used 512 {note = "tightly coupled"}
// CHECK-GENERIC:       "memory.pool"() <{sym_name = "sram", size = 262144 : i64, alignment = 16 : i64, targets = ["cpu", "npu"]}> : () -> ()
// CHECK-GENERIC-NEXT:  "memory.pool"() <{sym_name = "flash", alignment = 16 : i64, access = "ro"}> : () -> ()
// CHECK-GENERIC-NEXT:  "memory.pool"() <{sym_name = "dram", alignment = 64 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:  "memory.pool"() <{sym_name = "dtcm", size = 4096 : i64, alignment = 32 : i64, used = 512 : i64}> {note = "tightly coupled"} : () -> ()
memory.pool @sram size 262144 align 16 targets ["cpu", "npu"]
memory.pool @flash align 16 access ro
memory.pool @dram align 64
memory.pool @dtcm size 4096 align 32 used 512 {note = "tightly coupled"}

func.func private @conv2d(memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf32>)

// CHECK-LABEL: func.func @storages(
// CHECK-NEXT:    %s = memory.alloc_storage on "npu" : !memory.storage<4096>
// CHECK-NEXT:    %s2 = memory.alloc_storage(%n) align 128 : !memory.storage<?>
// CHECK-NEXT:    %s3 = memory.alloc_storage pools [@dtcm, @sram] : !memory.storage<512>
// CHECK-NEXT:    %p = memory.alloc_storage at @sram[8192] : !memory.storage<4096>
// CHECK-NEXT:    %q = memory.alloc_storage align 256 on "npu" pools [@sram] at @sram[256] {tag} : !memory.storage<64>
// CHECK-NEXT:    %b = memory.alloc_storage(%n) max 8192 at @sram[16384] : !memory.storage<?>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "storages"
// CHECK-GENERIC:       %s = "memory.alloc_storage"() <{alignment = 64 : i64, device = "npu"}> : () -> !memory.storage<4096>
// CHECK-GENERIC-NEXT:  %s2 = "memory.alloc_storage"(%n) <{alignment = 128 : i64}> : (index) -> !memory.storage<?>
// CHECK-GENERIC-NEXT:  %s3 = "memory.alloc_storage"() <{alignment = 64 : i64, pools = [@dtcm, @sram]}> : () -> !memory.storage<512>
// CHECK-GENERIC-NEXT:  %p = "memory.alloc_storage"() <{alignment = 64 : i64, pool = @sram, offset = 8192 : i64}> : () -> !memory.storage<4096>
// CHECK-GENERIC-NEXT:  %q = "memory.alloc_storage"() <{alignment = 256 : i64, device = "npu", pools = [@sram], pool = @sram, offset = 256 : i64}> {tag} : () -> !memory.storage<64>
// CHECK-GENERIC-NEXT:  %b = "memory.alloc_storage"(%n) <{pool = @sram, offset = 16384 : i64, max_size = 8192 : i64}> : (index) -> !memory.storage<?>
func.func @storages(%n : index) {
  %s = memory.alloc_storage align 64 on "npu" : !memory.storage<4096>
  %s2 = memory.alloc_storage(%n) align 128 : !memory.storage<?>
  %s3 = memory.alloc_storage align 64 pools [@dtcm, @sram] : !memory.storage<512>
  %p = memory.alloc_storage align 64 at @sram[8192] : !memory.storage<4096>
  %q = memory.alloc_storage align 256 on "npu" pools [@sram] at @sram[256] {tag} : !memory.storage<64>
  %b = memory.alloc_storage(%n) max 8192 at @sram[16384] : !memory.storage<?>
  func.return
}

// CHECK-LABEL: func.func @tensors(
// CHECK-NEXT:    %s = memory.alloc_storage : !memory.storage<4096>
// CHECK-NEXT:    %d = memory.alloc_storage(%n) : !memory.storage<?>
// CHECK-NEXT:    %t = memory.alloc_tensor %s[1024] : !memory.storage<4096> -> memref<16x16xf32>
// CHECK-NEXT:    %u = memory.alloc_tensor %d[0](%n) : !memory.storage<?> -> memref<?x64xf32>
// CHECK-NEXT:    %v = memory.alloc_tensor %d[%n] {tag} : !memory.storage<?> -> memref<8xf32>
// CHECK-NEXT:    %o = memory.alloc_tensor %s[0] : !memory.storage<4096> -> memref<1x4x6x6xf32>
// CHECK-NEXT:    memory.invoke @conv2d ins(%x, %w : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>) outs(%o : memref<1x4x6x6xf32>) {strides = [1 : i64, 1 : i64]}
// CHECK-NEXT:    memory.invoke @conv2d outs(%o : memref<1x4x6x6xf32>)
// CHECK-NEXT:    memory.kill %t : memref<16x16xf32>
// CHECK-NEXT:    memory.kill %s : !memory.storage<4096>
// CHECK-NEXT:    memory.kill %d {tag} : !memory.storage<?>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "tensors"
// CHECK-GENERIC:       %t = "memory.alloc_tensor"(%s) <{offset = 1024 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!memory.storage<4096>) -> memref<16x16xf32>
// CHECK-GENERIC-NEXT:  %u = "memory.alloc_tensor"(%d, %n) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 1>}> : (!memory.storage<?>, index) -> memref<?x64xf32>
// CHECK-GENERIC-NEXT:  %v = "memory.alloc_tensor"(%d, %n) <{operandSegmentSizes = array<i32: 1, 1, 0>}> {tag} : (!memory.storage<?>, index) -> memref<8xf32>
// CHECK-GENERIC:       "memory.invoke"(%x, %w, %o) <{callee = @conv2d, operandSegmentSizes = array<i32: 2, 1>}> {strides = [1 : i64, 1 : i64]} : (memref<1x3x8x8xf32>, memref<4x3x3x3xf32>, memref<1x4x6x6xf32>) -> ()
// CHECK-GENERIC-NEXT:  "memory.invoke"(%o) <{callee = @conv2d, operandSegmentSizes = array<i32: 0, 1>}> : (memref<1x4x6x6xf32>) -> ()
// CHECK-GENERIC-NEXT:  "memory.kill"(%t) : (memref<16x16xf32>) -> ()
// CHECK-GENERIC-NEXT:  "memory.kill"(%s) : (!memory.storage<4096>) -> ()
// CHECK-GENERIC-NEXT:  "memory.kill"(%d) {tag} : (!memory.storage<?>) -> ()
func.func @tensors(%n : index, %x : memref<1x3x8x8xf32>, %w : memref<4x3x3x3xf32>) {
  %s = memory.alloc_storage : !memory.storage<4096>
  %d = memory.alloc_storage(%n) : !memory.storage<?>
  %t = memory.alloc_tensor %s[1024] : !memory.storage<4096> -> memref<16x16xf32>
  %u = memory.alloc_tensor %d[0](%n) : !memory.storage<?> -> memref<?x64xf32>
  %v = memory.alloc_tensor %d[%n] {tag} : !memory.storage<?> -> memref<8xf32>
  %o = memory.alloc_tensor %s[0] : !memory.storage<4096> -> memref<1x4x6x6xf32>
  memory.invoke @conv2d ins(%x, %w : memref<1x3x8x8xf32>, memref<4x3x3x3xf32>)
                        outs(%o : memref<1x4x6x6xf32>) {strides = [1, 1]}
  memory.invoke @conv2d outs(%o : memref<1x4x6x6xf32>)
  memory.kill %t : memref<16x16xf32>
  memory.kill %s : !memory.storage<4096>
  memory.kill %d {tag} : !memory.storage<?>
  func.return
}

// `align N` on a tensor (the alignment it needs, when its place guarantees
// more: what `coalesce` records) is printed only when present, after the
// dims; generic form: the `align` property.
// CHECK-LABEL: func.func @aligned_tensors(
// CHECK-NEXT:    %s = memory.alloc_storage align 128 : !memory.storage<4096>
// CHECK-NEXT:    %d = memory.alloc_storage(%n) align 32 : !memory.storage<?>
// CHECK-NEXT:    %t = memory.alloc_tensor %s[0] align 16 : !memory.storage<4096> -> memref<4xf32>
// CHECK-NEXT:    %u = memory.alloc_tensor %s[64] align 64 {tag} : !memory.storage<4096> -> memref<16xf32>
// CHECK-NEXT:    %v = memory.alloc_tensor %d[%n](%n) align 32 : !memory.storage<?> -> memref<?xf32>
// CHECK-NEXT:    %w = memory.alloc_tensor %s[128] : !memory.storage<4096> -> memref<4xf32>
// CHECK-GENERIC-LABEL: "func.func"() <{sym_name = "aligned_tensors"
// CHECK-GENERIC:       %t = "memory.alloc_tensor"(%s) <{offset = 0 : i64, align = 16 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!memory.storage<4096>) -> memref<4xf32>
// CHECK-GENERIC-NEXT:  %u = "memory.alloc_tensor"(%s) <{offset = 64 : i64, align = 64 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> {tag} : (!memory.storage<4096>) -> memref<16xf32>
// CHECK-GENERIC-NEXT:  %v = "memory.alloc_tensor"(%d, %n, %n) <{align = 32 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (!memory.storage<?>, index, index) -> memref<?xf32>
// CHECK-GENERIC-NEXT:  %w = "memory.alloc_tensor"(%s) <{offset = 128 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!memory.storage<4096>) -> memref<4xf32>
func.func @aligned_tensors(%n : index) {
  %s = memory.alloc_storage align 128 : !memory.storage<4096>
  %d = memory.alloc_storage(%n) align 32 : !memory.storage<?>
  %t = memory.alloc_tensor %s[0] align 16 : !memory.storage<4096> -> memref<4xf32>
  %u = memory.alloc_tensor %s[64] align 64 {tag} : !memory.storage<4096> -> memref<16xf32>
  %v = memory.alloc_tensor %d[%n](%n) align 32 : !memory.storage<?> -> memref<?xf32>
  %w = memory.alloc_tensor %s[128] : !memory.storage<4096> -> memref<4xf32>
  func.return
}

// Kills in the two branches of an scf.if are on different paths; a tensor
// of a killed storage's sibling is fine.
// CHECK-LABEL: func.func @branches(
// CHECK:         scf.if %c {
// CHECK-NEXT:      memory.kill %s : !memory.storage<64>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      memory.kill %s : !memory.storage<64>
// CHECK-NEXT:    }
func.func @branches(%c : i1) {
  %s = memory.alloc_storage : !memory.storage<64>
  scf.if %c {
    memory.kill %s : !memory.storage<64>
  } else {
    memory.kill %s : !memory.storage<64>
  }
  func.return
}
