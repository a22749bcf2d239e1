// RUN: memplan-opt %s --manifest-alloc --split-input-file | filecheck %s
// RUN: memplan-opt %s --plan --verify-plan --split-input-file > /dev/null

// Issue 26's reproducers: manifest-alloc's in-place and loop-buffer decisions
// ask the one alias analysis (passes/analysis/aliasing.py), in which a value's
// bytes stay needed while anything that may alias them (views, scf.if and
// scf.for results and iteration arguments) is live. The second RUN line plans
// each case and verifies the plan (verify-plan's clobber check).

// A value's storage does not become a loop's double buffer while an scf.if
// result that may alias it is read after the loop: %a is copied into the
// loop's own first buffer, so the second iteration writes there, not over %r.
func.func private @k0(tensor<4xf32>) -> tensor<4xf32>
func.func private @use(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @loop_buffer_if_alias(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 2 : index
  %st = arith.constant 1 : index
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) { scf.yield %a : tensor<4xf32> } else { scf.yield %x : tensor<4xf32> }
  %l = scf.for %i = %lb to %ub step %st iter_args(%it = %a) -> (tensor<4xf32>) {
    %n = func.call @k0(%it) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  %u = func.call @use(%r, %l) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %u : tensor<4xf32>
}

// CHECK-LABEL: func.func @loop_buffer_if_alias(
// CHECK:         %l_buffer = memory.alloc_tensor %l_storage[0]
// CHECK-NEXT:    "memref.copy"(%a, %l_buffer)
// CHECK:         scf.for %i = %lb to %ub step %st iter_args(%it = %l_buffer, %it_spare = %l_spare)

// -----

// The same through a nested scf.if and a view: %a's storage is not taken over.
func.func private @k0(tensor<4xf32>) -> tensor<4xf32>
func.func private @flat(tensor<4xf32>) -> tensor<2x2xf32> attributes {memory.view}
func.func private @use2(tensor<2x2xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @loop_buffer_nested_view(%x: tensor<4xf32>, %y: tensor<2x2xf32>, %c: i1, %d: i1) -> tensor<4xf32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 2 : index
  %st = arith.constant 1 : index
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %v = func.call @flat(%a) : (tensor<4xf32>) -> tensor<2x2xf32>
  %r = scf.if %c -> (tensor<2x2xf32>) {
    %s = scf.if %d -> (tensor<2x2xf32>) { scf.yield %v : tensor<2x2xf32> } else { scf.yield %y : tensor<2x2xf32> }
    scf.yield %s : tensor<2x2xf32>
  } else {
    scf.yield %y : tensor<2x2xf32>
  }
  %l = scf.for %i = %lb to %ub step %st iter_args(%it = %a) -> (tensor<4xf32>) {
    %n = func.call @k0(%it) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  %u = func.call @use2(%r, %l) : (tensor<2x2xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %u : tensor<4xf32>
}

// CHECK-LABEL: func.func @loop_buffer_nested_view(
// CHECK:         "memref.copy"(%a, %l_buffer)
// CHECK:         scf.for %i = %lb to %ub step %st iter_args(%it = %l_buffer, %it_spare = %l_spare)

// -----

// Still taken over when nothing aliasing %a is read after the loop: the
// scf.if result's last reader is before it.
func.func private @k0(tensor<4xf32>) -> tensor<4xf32>
func.func private @use(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @loop_buffer_alias_dead(%x: tensor<4xf32>, %c: i1) -> (tensor<4xf32>, tensor<4xf32>) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 2 : index
  %st = arith.constant 1 : index
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) { scf.yield %a : tensor<4xf32> } else { scf.yield %x : tensor<4xf32> }
  %u = func.call @use(%r, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = scf.for %i = %lb to %ub step %st iter_args(%it = %a) -> (tensor<4xf32>) {
    %n = func.call @k0(%it) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  func.return %u, %l : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @loop_buffer_alias_dead(
// CHECK-NOT:     memref.copy
// CHECK:         scf.for %i = %lb to %ub step %st iter_args(%it = %a, %it_spare = %l_spare)

// -----

// In place is refused while an scf.if result that may alias the operand is
// live: %r is returned after @inc, so %b gets its own storage. The same for
// both branches yielding %a, a nested scf.if, a yielded view of %a, and a
// later reader of %r. A loop carrying %a (@inplace_loop_result) copies it into
// its own buffer first, since @inc reads %a after the loop: its result never
// holds %a's bytes, and %b takes them.
func.func private @k0(tensor<4xf32>) -> tensor<4xf32>
func.func private @inc(tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func private @use(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func private @flat(tensor<4xf32>) -> tensor<2x2xf32> attributes {memory.view}
func.func @inplace_if_alias(%x: tensor<4xf32>, %c: i1) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) { scf.yield %a : tensor<4xf32> } else { scf.yield %x : tensor<4xf32> }
  %b = func.call @inc(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r, %b : tensor<4xf32>, tensor<4xf32>
}
func.func @inplace_both_branches(%x: tensor<4xf32>, %c: i1) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) { scf.yield %a : tensor<4xf32> } else { scf.yield %a : tensor<4xf32> }
  %b = func.call @inc(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r, %b : tensor<4xf32>, tensor<4xf32>
}
func.func @inplace_nested_if(%x: tensor<4xf32>, %c: i1, %d: i1) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) {
    %s = scf.if %d -> (tensor<4xf32>) { scf.yield %a : tensor<4xf32> } else { scf.yield %x : tensor<4xf32> }
    scf.yield %s : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  %b = func.call @inc(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r, %b : tensor<4xf32>, tensor<4xf32>
}
func.func @inplace_view_yielded(%x: tensor<4xf32>, %y: tensor<2x2xf32>, %c: i1) -> (tensor<2x2xf32>, tensor<4xf32>) {
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %v = func.call @flat(%a) : (tensor<4xf32>) -> tensor<2x2xf32>
  %r = scf.if %c -> (tensor<2x2xf32>) { scf.yield %v : tensor<2x2xf32> } else { scf.yield %y : tensor<2x2xf32> }
  %b = func.call @inc(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r, %b : tensor<2x2xf32>, tensor<4xf32>
}
func.func @inplace_later_reader(%x: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) { scf.yield %a : tensor<4xf32> } else { scf.yield %x : tensor<4xf32> }
  %b = func.call @inc(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %u = func.call @use(%r, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %u : tensor<4xf32>
}
func.func @inplace_loop_result(%x: tensor<4xf32>, %n: index) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%it = %a) -> (tensor<4xf32>) {
    scf.yield %it : tensor<4xf32>
  }
  %b = func.call @inc(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %l, %b : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @inplace_if_alias(
// CHECK-NOT:     memory.inplace_of
// CHECK:         %b = memory.alloc_tensor %b_storage[0]
// CHECK-LABEL: func.func @inplace_both_branches(
// CHECK-NOT:     memory.inplace_of
// CHECK:         %b = memory.alloc_tensor %b_storage[0]
// CHECK-LABEL: func.func @inplace_nested_if(
// CHECK-NOT:     memory.inplace_of
// CHECK:         %b = memory.alloc_tensor %b_storage[0]
// CHECK-LABEL: func.func @inplace_view_yielded(
// CHECK-NOT:     memory.inplace_of
// CHECK:         %b = memory.alloc_tensor %b_storage[0]
// CHECK-LABEL: func.func @inplace_later_reader(
// CHECK-NOT:     memory.inplace_of
// CHECK:         %b = memory.alloc_tensor %b_storage[0]
// CHECK-LABEL: func.func @inplace_loop_result(
// CHECK:         "memref.copy"(%a, %l_buffer)
// CHECK:         %b = memory.alloc_tensor %a_storage[0] {memory.inplace_of = 0 : i64}

// -----

// In place still applies when the scf.if result's last reader comes before
// the in-place call. (A schedule moving @inc above @use, a legal reordering
// of values, gives @inplace_later_reader above: refused.)
func.func private @k0(tensor<4xf32>) -> tensor<4xf32>
func.func private @inc(tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func private @use(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @inplace_after_alias_dies(%x: tensor<4xf32>, %c: i1) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) { scf.yield %a : tensor<4xf32> } else { scf.yield %x : tensor<4xf32> }
  %u = func.call @use(%r, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @inc(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %u, %b : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @inplace_after_alias_dies(
// CHECK:         %b = memory.alloc_tensor %a_storage[0] {memory.inplace_of = 0 : i64}

// -----

// The same value at two operands: @mix declares only operand 1 shareable
// with its result, so carving the result over %a would also overwrite
// operand 0: refused. @mix2 declares both positions: shared. A view of %a
// at the undeclared position is refused too.
func.func private @k0(tensor<4xf32>) -> tensor<4xf32>
func.func private @flat(tensor<4xf32>) -> tensor<2x2xf32> attributes {memory.view}
func.func private @mix(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 1>}
func.func private @mix2(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 0, 0, 1>}
func.func private @mixv(tensor<2x2xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 1>}
func.func @same_value_twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @mix(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %d = func.call @mix2(%c, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = func.call @k0(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %v = func.call @flat(%e) : (tensor<4xf32>) -> tensor<2x2xf32>
  %f = func.call @mixv(%v, %e) : (tensor<2x2xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %b, %d, %f : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @same_value_twice(
// CHECK:         %b = memory.alloc_tensor %b_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK:         %d = memory.alloc_tensor %c_storage[0] {memory.inplace_of = 0 : i64}
// CHECK:         %f = memory.alloc_tensor %f_storage[0] : !memory.storage<16> -> memref<4xf32>

// -----

// A loop's result written straight into its carried buffer %a, by a kernel
// whose in-place operand is an scf.if result that may be %a itself (or a new
// tensor elsewhere): where the two share bytes they start at the same byte,
// as `memory.inplace` allows, so verify-plan (second RUN line) accepts the
// plan. (The campaign against the original program found verify-plan
// refusing it while it required the operand to be one place only.)
func.func private @k(tensor<4xf32>) -> tensor<4xf32>
func.func private @acc(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 1>}
func.func @inplace_on_a_branch_result(%c: i1, %x: tensor<4xf32>) -> tensor<4xf32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 2 : index
  %st = arith.constant 1 : index
  %l = scf.for %i = %lb to %ub step %st iter_args(%a = %x) -> (tensor<4xf32>) {
    %r = scf.if %c -> (tensor<4xf32>) {
      scf.yield %a : tensor<4xf32>
    } else {
      %n = func.call @k(%x) : (tensor<4xf32>) -> tensor<4xf32>
      scf.yield %n : tensor<4xf32>
    }
    %s = func.call @acc(%x, %r) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  func.return %l : tensor<4xf32>
}

// CHECK-LABEL: func.func @inplace_on_a_branch_result(
// CHECK:         scf.for {{.*}} iter_args(%a = %l_buffer)
// CHECK:           memory.invoke @acc ins(%x, %r : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>)
