// RUN: memplan-opt %s --usmp --verify-plan --split-input-file | filecheck %s --check-prefixes=CHECK,DEFAULT
// RUN: memplan-opt %s --usmp='scope=module' --verify-plan --split-input-file | filecheck %s --check-prefixes=CHECK,MODULE
// RUN: memplan-opt %s --usmp='replan=true' --verify-plan --split-input-file | filecheck %s --check-prefixes=CHECK,REPLAN
// RUN: memplan-opt %s --usmp='split-storages=false' --verify-plan --split-input-file | filecheck %s --check-prefixes=CHECK,WHOLE

// scope=module lays the functions out one after another on one time line
// and plans them as one program. @first and @second never run at the same
// time, so the plan is the per-function one: both start at 0 and used is
// max(128, 192) = 192 either way.
memory.pool @sram
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @first(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %b = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  memory.kill %b : !memory.storage<64>
  func.return
}
func.func @second(%x: memref<16xf32>) {
  %c = memory.alloc_storage : !memory.storage<128>
  %d = memory.alloc_storage : !memory.storage<64>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<128> -> memref<16xf32>
  %td = memory.alloc_tensor %d[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%tc : memref<16xf32>) outs(%td : memref<16xf32>)
  memory.kill %c : !memory.storage<128>
  memory.kill %d : !memory.storage<64>
  func.return
}
// CHECK:         memory.pool @sram used 192
// CHECK-LABEL: func.func @first
// CHECK-NEXT:    %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
// CHECK-NEXT:    %b = memory.alloc_storage at @sram[64] : !memory.storage<64>
// CHECK-LABEL: func.func @second
// CHECK-NEXT:    %c = memory.alloc_storage at @sram[0] : !memory.storage<128>
// CHECK-NEXT:    %d = memory.alloc_storage at @sram[128] : !memory.storage<64>

// -----

// A pinned storage is kept (pre-placed) unless replan=true: by default %b
// and %a are planned around %p at 64, using the whole 256 bytes; replanned,
// %b (the largest) goes to 0 and %p, %a stack above it.
memory.pool @sram size 256
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @pinned() {
  %p = memory.alloc_storage at @sram[64] : !memory.storage<64>
  %a = memory.alloc_storage : !memory.storage<64>
  %b = memory.alloc_storage : !memory.storage<128>
  %tp = memory.alloc_tensor %p[0] : !memory.storage<64> -> memref<16xf32>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%tp : memref<16xf32>) outs(%ta : memref<16xf32>)
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %p : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  memory.kill %b : !memory.storage<128>
  func.return
}
// CHECK:         memory.pool @sram size 256 used 256
// CHECK-LABEL: func.func @pinned
// DEFAULT-NEXT:  %p = memory.alloc_storage at @sram[64] : !memory.storage<64>
// DEFAULT-NEXT:  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
// DEFAULT-NEXT:  %b = memory.alloc_storage at @sram[128] : !memory.storage<128>
// MODULE-NEXT:   %p = memory.alloc_storage at @sram[64] : !memory.storage<64>
// WHOLE-NEXT:    %p = memory.alloc_storage at @sram[64] : !memory.storage<64>
// REPLAN-NEXT:   %p = memory.alloc_storage at @sram[128] : !memory.storage<64>
// REPLAN-NEXT:   %a = memory.alloc_storage at @sram[192] : !memory.storage<64>
// REPLAN-NEXT:   %b = memory.alloc_storage at @sram[0] : !memory.storage<128>

// -----

// split-storages=false keeps a multi-tensor storage whole: the 192 bytes
// laid end to end are pinned as they are. By default it is split into one
// storage per tensor and %ta, %tc share bytes: 128.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @split(%x: memref<16xf32>) {
  %region = memory.alloc_storage : !memory.storage<192>
  %ta = memory.alloc_tensor %region[0] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  %tb = memory.alloc_tensor %region[64] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %ta : memref<16xf32>
  %tc = memory.alloc_tensor %region[128] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
  memory.kill %tb : memref<16xf32>
  memory.invoke @k ins(%tc : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %tc : memref<16xf32>
  memory.kill %region : !memory.storage<192>
  func.return
}
// DEFAULT:       memory.pool @workspace_cpu targets ["cpu"] used 128
// DEFAULT-LABEL: func.func @split
// DEFAULT-NEXT:    %ta_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>
// WHOLE:         memory.pool @workspace_cpu targets ["cpu"] used 192
// WHOLE-LABEL:   func.func @split
// WHOLE-NEXT:      %region = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<192>
// WHOLE-NEXT:      %ta = memory.alloc_tensor %region[0] : !memory.storage<192> -> memref<16xf32>
