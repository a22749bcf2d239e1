// RUN: memplan-opt %s --insert-kills --split-input-file | filecheck %s
// Idempotence: a second run changes nothing.
// RUN: memplan-opt %s --insert-kills --split-input-file | memplan-opt --insert-kills --split-input-file | filecheck %s

// Straight-line code: each tensor and storage is killed right after the op
// holding its last use (a use of a tensor is a use of its storage); at one
// point tensors are killed before their storage. %c is never used: killed
// right after its allocation.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @straight_line(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %b = memory.alloc_storage : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  %c = memory.alloc_storage : !memory.storage<32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
  func.return
}
// CHECK-LABEL: func.func @straight_line
// CHECK:         memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
// CHECK-NEXT:    memory.kill %ta : memref<16xf32>
// CHECK-NEXT:    memory.kill %a : !memory.storage<64>
// CHECK-NEXT:    %c = memory.alloc_storage : !memory.storage<32>
// CHECK-NEXT:    memory.kill %c : !memory.storage<32>
// CHECK-NEXT:    memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
// CHECK-NEXT:    memory.kill %tb : memref<16xf32>
// CHECK-NEXT:    memory.kill %b : !memory.storage<64>
// CHECK-NEXT:    func.return

// -----

// Views: the last use of %s is the use of %w, a reinterpret_cast of a
// subview of its tensor, so the kills follow that invoke.
func.func private @k2(memref<8xf32>, memref<16xf32>)
func.func @views(%x: memref<16xf32>) {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  %v = memref.subview %t[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  %w = memref.reinterpret_cast %v to offset: [0], sizes: [8], strides: [1] : memref<8xf32, strided<[1]>> to memref<8xf32>
  memory.invoke @k2 ins(%w : memref<8xf32>) outs(%x : memref<16xf32>)
  func.return
}
// CHECK-LABEL: func.func @views
// CHECK:         memory.invoke @k2 ins(%w : memref<8xf32>) outs(%x : memref<16xf32>)
// CHECK-NEXT:    memory.kill %t : memref<16xf32>
// CHECK-NEXT:    memory.kill %s : !memory.storage<64>
// CHECK-NEXT:    func.return

// -----

// Loops: %a is used inside the loop, so it is killed after the loop (killing
// it inside would kill it once per iteration); %b lives in the body and is
// killed there, after its last use.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @loop(%n: index, %x: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  scf.for %i = %c0 to %n step %c1 {
    %b = memory.alloc_storage : !memory.storage<64>
    %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
    memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
    memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
  }
  func.return
}
// CHECK-LABEL: func.func @loop
// CHECK:         scf.for
// CHECK:           memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
// CHECK-NEXT:      memory.kill %tb : memref<16xf32>
// CHECK-NEXT:      memory.kill %b : !memory.storage<64>
// CHECK-NEXT:    }
// CHECK-NEXT:    memory.kill %ta : memref<16xf32>
// CHECK-NEXT:    memory.kill %a : !memory.storage<64>
// CHECK-NEXT:    func.return

// -----

// scf.if: %a, used in the then-branch, is killed after the scf.if (its
// outermost op in %a's block). %d and %e are yielded out of their branch:
// their lifetime goes on through %r, which no kill can name, so they get no
// kill; %td and %te likewise. %f is local to the else-branch: killed there.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @if_else(%c: i1, %x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %r = scf.if %c -> (memref<16xf32>) {
    %d = memory.alloc_storage : !memory.storage<64>
    %td = memory.alloc_tensor %d[0] : !memory.storage<64> -> memref<16xf32>
    memory.invoke @k ins(%ta : memref<16xf32>) outs(%td : memref<16xf32>)
    scf.yield %td : memref<16xf32>
  } else {
    %e = memory.alloc_storage : !memory.storage<64>
    %te = memory.alloc_tensor %e[0] : !memory.storage<64> -> memref<16xf32>
    %f = memory.alloc_storage : !memory.storage<16>
    scf.yield %te : memref<16xf32>
  }
  memory.invoke @k ins(%r : memref<16xf32>) outs(%x : memref<16xf32>)
  func.return
}
// CHECK-LABEL: func.func @if_else
// CHECK:         %r = scf.if %c -> (memref<16xf32>) {
// CHECK-NOT:       memory.kill
// CHECK:           scf.yield %td : memref<16xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %e = memory.alloc_storage : !memory.storage<64>
// CHECK-NEXT:      %te = memory.alloc_tensor %e[0] : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:      %f = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:      memory.kill %f : !memory.storage<16>
// CHECK-NEXT:      scf.yield %te : memref<16xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    memory.kill %ta : memref<16xf32>
// CHECK-NEXT:    memory.kill %a : !memory.storage<64>
// CHECK-NEXT:    memory.invoke @k ins(%r : memref<16xf32>) outs(%x : memref<16xf32>)
// CHECK-NEXT:    func.return

// -----

// Escaping values get no kill: %r's tensor is returned, %p's is stored into
// a memref of memrefs. %n only goes to a call without results: killed.
func.func private @use(memref<16xf32>)
func.func @escapes(%box: memref<memref<16xf32>>) -> memref<16xf32> {
  %r = memory.alloc_storage : !memory.storage<64>
  %tr = memory.alloc_tensor %r[0] : !memory.storage<64> -> memref<16xf32>
  %p = memory.alloc_storage : !memory.storage<64>
  %tp = memory.alloc_tensor %p[0] : !memory.storage<64> -> memref<16xf32>
  memref.store %tp, %box[] : memref<memref<16xf32>>
  %n = memory.alloc_storage : !memory.storage<64>
  %tn = memory.alloc_tensor %n[0] : !memory.storage<64> -> memref<16xf32>
  func.call @use(%tn) : (memref<16xf32>) -> ()
  func.return %tr : memref<16xf32>
}
// CHECK-LABEL: func.func @escapes
// CHECK-NOT:     memory.kill %t{{[rp]}}
// CHECK-NOT:     memory.kill %{{[rp]}} :
// CHECK:         func.call @use(%tn) : (memref<16xf32>) -> ()
// CHECK-NEXT:    memory.kill %tn : memref<16xf32>
// CHECK-NEXT:    memory.kill %n : !memory.storage<64>
// CHECK-NEXT:    func.return %tr : memref<16xf32>

// -----

// Values already killed keep their kill and get no other: %a's kill stays
// where the user put it, and its tensor %ta counts as killed with it (a kill
// of %ta after the storage's kill would be a use after kill). %tb is killed
// by the user; only its storage %b gets a kill, after the last use of any of
// its aliases, which is the user's kill of %tb.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @already_killed(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  %b = memory.alloc_storage : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %tb : memref<16xf32>
  memory.kill %a : !memory.storage<64>
  func.return
}
// CHECK-LABEL: func.func @already_killed
// CHECK:         memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
// CHECK-NEXT:    %b = memory.alloc_storage
// CHECK-NEXT:    %tb = memory.alloc_tensor
// CHECK-NEXT:    memory.invoke @k ins(%x : memref<16xf32>) outs(%tb : memref<16xf32>)
// CHECK-NEXT:    memory.kill %tb : memref<16xf32>
// CHECK-NEXT:    memory.kill %b : !memory.storage<64>
// CHECK-NEXT:    memory.kill %a : !memory.storage<64>
// CHECK-NEXT:    func.return

// -----

// A CFG: %a is used in ^bb1 only. It dies in ^bb1 after its use, and on the
// edge ^bb0 -> ^bb2, where it is live out of ^bb0 but not live into ^bb2:
// killed at the start of ^bb2 (its only predecessor has it live out). %b is
// used in both ^bb1 and ^bb3 (after the join), so it stays live through
// ^bb2 and dies in ^bb3.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @cfg(%c: i1, %x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %b = memory.alloc_storage : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  cf.br ^bb3
^bb2:
  cf.br ^bb3
^bb3:
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
  func.return
}
// CHECK-LABEL: func.func @cfg
// CHECK:         cf.cond_br %c, ^[[BB1:.*]], ^[[BB2:.*]]
// CHECK-NEXT:  ^[[BB1]]:
// CHECK-NEXT:    memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
// CHECK-NEXT:    memory.kill %ta : memref<16xf32>
// CHECK-NEXT:    memory.kill %a : !memory.storage<64>
// CHECK-NEXT:    cf.br ^[[BB3:.*]]
// CHECK-NEXT:  ^[[BB2]]:
// CHECK-NEXT:    memory.kill %ta : memref<16xf32>
// CHECK-NEXT:    memory.kill %a : !memory.storage<64>
// CHECK-NEXT:    cf.br ^[[BB3]]
// CHECK-NEXT:  ^[[BB3]]:
// CHECK-NEXT:    memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
// CHECK-NEXT:    memory.kill %tb : memref<16xf32>
// CHECK-NEXT:    memory.kill %b : !memory.storage<64>
// CHECK-NEXT:    func.return

// -----

// A value passed as a branch argument lives on as the block argument %m,
// which a kill of %b cannot name where it dies: no kill for %b and %tb.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @branch_argument(%x: memref<16xf32>) {
  %b = memory.alloc_storage : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  cf.br ^bb1(%tb : memref<16xf32>)
^bb1(%m: memref<16xf32>):
  memory.invoke @k ins(%m : memref<16xf32>) outs(%x : memref<16xf32>)
  func.return
}
// CHECK-LABEL: func.func @branch_argument
// CHECK-NOT:     memory.kill
// CHECK:         func.return
