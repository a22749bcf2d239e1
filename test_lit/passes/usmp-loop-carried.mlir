// RUN: not memplan-opt %s --usmp --split-input-file 2>&1 | filecheck %s --check-prefix=ERR
// RUN: memplan-opt %s --coalesce --reuse --split-input-file | filecheck %s
// RUN: not memplan-opt %s --verify-plan --split-input-file 2>&1 | filecheck %s --check-prefix=VERIFY

// %s is allocated in the scf.for body (op 2) and yielded into %acc, which
// the next iteration reads while it has allocated a new %s: two instances
// are live at once, so no single static offset is right and usmp refuses
// it. reuse leaves it alone: without the check it would share one slot
// with %late (same size, allocated after the loop's last use of %r).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @scf_carried(%n: index, %init: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (memref<16xf32>) {
    %s = memory.alloc_storage : !memory.storage<64>
    %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
    memory.invoke @k ins(%acc : memref<16xf32>) outs(%t : memref<16xf32>)
    scf.yield %t : memref<16xf32>
  }
  memory.invoke @k ins(%r : memref<16xf32>) outs(%init : memref<16xf32>)
  %late = memory.alloc_storage : !memory.storage<64>
  %tl = memory.alloc_tensor %late[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%init : memref<16xf32>) outs(%tl : memref<16xf32>)
  memory.kill %late : !memory.storage<64>
  func.return
}
// ERR: usmp: storage %s of @scf_carried (64 bytes) is allocated inside scf.for (op 2) and yielded into its iteration arguments: the previous iteration's instance and the new one would be live at once, and two instances of one storage cannot share one static place
// CHECK-LABEL: func.func @scf_carried
// CHECK:         scf.for
// CHECK-NEXT:      %s = memory.alloc_storage : !memory.storage<64>
// CHECK:         %late = memory.alloc_storage : !memory.storage<64>

// -----

// The same with cf: ^bb1 allocates %s and branches back to itself with
// %t; the block argument %acc brings the previous instance round the back
// edge and is read after the new %s is allocated. coalesce leaves %s out
// of the merged storage of ^bb1 (only %tmp is left: nothing to merge).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @cf_carried(%init: memref<16xf32>, %go: i1) {
  cf.br ^bb1(%init : memref<16xf32>)
^bb1(%acc: memref<16xf32>):
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  %tmp = memory.alloc_storage : !memory.storage<64>
  %tt = memory.alloc_tensor %tmp[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%acc : memref<16xf32>) outs(%tt : memref<16xf32>)
  memory.invoke @k ins(%tt : memref<16xf32>) outs(%t : memref<16xf32>)
  memory.kill %tmp : !memory.storage<64>
  cf.cond_br %go, ^bb1(%t : memref<16xf32>), ^bb2
^bb2:
  func.return
}
// ERR: usmp: storage %s of @cf_carried (64 bytes) is allocated inside a CFG cycle through block 1 of its region (ops 1-8) and passed round the back edge: the previous iteration's instance and the new one would be live at once, and two instances of one storage cannot share one static place
// CHECK-LABEL: func.func @cf_carried
// CHECK:         %s = memory.alloc_storage : !memory.storage<64>
// CHECK-NEXT:    %t = memory.alloc_tensor %s[0]
// CHECK-NEXT:    %tmp = memory.alloc_storage : !memory.storage<64>

// -----

// A plan already in the IR for such a storage is wrong whatever the offset:
// verify-plan reports it (and usmp refuses it).
memory.pool @sram size 128
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @pinned_carried(%n: index, %init: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (memref<16xf32>) {
    %s = memory.alloc_storage at @sram[0] : !memory.storage<64>
    %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
    memory.invoke @k ins(%acc : memref<16xf32>) outs(%t : memref<16xf32>)
    scf.yield %t : memref<16xf32>
  }
  func.return
}
// ERR: usmp: storage %s of @pinned_carried (64 bytes) is allocated inside scf.for (op 2)
// CHECK-LABEL: func.func @pinned_carried
// VERIFY: verify-plan: storage %s of @pinned_carried (64 bytes) is allocated inside scf.for (op 2) and yielded into its iteration arguments: the previous iteration's instance and the new one would be live at once, and two instances of one storage cannot share one static place

// -----

// Allocated outside the loop and carried through iter_args: one instance,
// planned as usual.
memory.pool @sram size 128
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @outside_carried(%n: index, %init: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %t) -> (memref<16xf32>) {
    memory.invoke @k ins(%init : memref<16xf32>) outs(%acc : memref<16xf32>)
    scf.yield %acc : memref<16xf32>
  }
  func.return
}
// ERR-LABEL: func.func @outside_carried
// ERR:         %s = memory.alloc_storage at @sram[0] : !memory.storage<64>
// CHECK-LABEL: func.func @outside_carried
