// RUN: memplan-opt %s -p dce --split-input-file | filecheck %s
// RUN: memplan-opt %s -p 'canonicalize,dce' --split-input-file | filecheck %s --check-prefix=CANON
// RUN: memplan-opt %s --split-input-file | filecheck %s --check-prefix=NONE

// Upstream xDSL passes run through -p; memory ops and upstream ops share a
// module. dce erases the unused constant but keeps the storage, whose
// allocation is a side effect. Without -p the input is printed unchanged.
// CHECK-LABEL: func.func @dead_constant
// CHECK-NOT:     arith.constant
// CHECK:         %s = memory.alloc_storage : !memory.storage<64>
// NONE-LABEL:  func.func @dead_constant
// NONE:          arith.constant 7 : index
func.func @dead_constant() {
  %c = arith.constant 7 : index
  %s = memory.alloc_storage align 64 : !memory.storage<64>
  func.return
}

// -----

// canonicalize folds 2 + 3; dce alone leaves the addition in place.
// Output chunks are separated by the same marker as input chunks.
// CHECK:       {{^// -{5}$}}
// CHECK-LABEL: func.func @fold
// CHECK:         arith.addi
// CANON-LABEL: func.func @fold
// CANON-NEXT:    %{{.*}} = arith.constant 5 : i32
// CANON-NEXT:    func.return %{{.*}} : i32
func.func @fold() -> i32 {
  %a = arith.constant 2 : i32
  %b = arith.constant 3 : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
