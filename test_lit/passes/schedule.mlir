// RUN: memplan-opt %s --schedule --split-input-file 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK < %t.remarks
// RUN: memplan-opt %s --schedule --plan --verify-plan --split-input-file 2>/dev/null >/dev/null
// RUN: not memplan-opt %s --schedule=algorithm=nope --split-input-file 2>&1 | filecheck %s --check-prefix=BAD
// BAD: error: in --schedule=algorithm=nope: schedule: algorithm must be one of best, post-order, list, dfs, exact (got 'nope')

// Two independent branches each make a 1 KiB tensor and shrink it. In the
// given order both 1 KiB tensors are live together (2064 bytes with the
// 16-byte ones); running each branch to its end first keeps one at a time:
// the list scheduler moves %sa before %b, 1056 bytes.
func.func private @big(tensor<4xf32>) -> tensor<256xf32>
func.func private @shrink(tensor<256xf32>) -> tensor<4xf32>
func.func private @add(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @two_branches(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @big(%x) : (tensor<4xf32>) -> tensor<256xf32>
  %b = func.call @big(%x) : (tensor<4xf32>) -> tensor<256xf32>
  %sa = func.call @shrink(%a) : (tensor<256xf32>) -> tensor<4xf32>
  %sb = func.call @shrink(%b) : (tensor<256xf32>) -> tensor<4xf32>
  %r = func.call @add(%sa, %sb) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @two_branches(
// CHECK-NEXT:    %a = func.call @big(%x)
// CHECK-NEXT:    %sa = func.call @shrink(%a)
// CHECK-NEXT:    %b = func.call @big(%x)
// CHECK-NEXT:    %sb = func.call @shrink(%b)
// CHECK-NEXT:    %r = func.call @add(%sa, %sb)
// REMARK: remark: schedule: @two_branches: peak of live tensor bytes 2064 -> 1056, each tensor counted apart (before in-place sharing) (list)

// -----

// The same two branches with bounded dynamic tensors: %a and %b hold at
// most 256 floats (`memory.max_shapes`), and schedule counts them at that
// bound, as usmp reserves it. So it finds the static case's order and peak,
// 2064 -> 1056 (counting only static bytes it saw 32 -> 32 and kept the
// given order, which the plan then paid for at the bound).
func.func private @big(tensor<4xf32>, index) -> tensor<?xf32> attributes {memory.shape_fn = @big_shape}
func.func @big_shape(%x: tensor<4xf32>, %n: index) -> index {
  func.return %n : index
}
func.func private @shrink(tensor<?xf32>) -> tensor<4xf32>
func.func private @add(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @bounded_branches(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %a = func.call @big(%x, %n) {memory.max_shapes = [array<i64: 256>]} : (tensor<4xf32>, index) -> tensor<?xf32>
  %b = func.call @big(%x, %n) {memory.max_shapes = [array<i64: 256>]} : (tensor<4xf32>, index) -> tensor<?xf32>
  %sa = func.call @shrink(%a) : (tensor<?xf32>) -> tensor<4xf32>
  %sb = func.call @shrink(%b) : (tensor<?xf32>) -> tensor<4xf32>
  %r = func.call @add(%sa, %sb) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @bounded_branches(
// CHECK-NEXT:    %a = func.call @big(%x, %n)
// CHECK-NEXT:    %sa = func.call @shrink(%a)
// CHECK-NEXT:    %b = func.call @big(%x, %n)
// CHECK-NEXT:    %sb = func.call @shrink(%b)
// CHECK-NEXT:    %r = func.call @add(%sa, %sb)
// REMARK: remark: schedule: @bounded_branches: peak of live tensor bytes 2064 -> 1056, each tensor counted apart (before in-place sharing) (list)

// -----

// %a is returned, so once made it stays live to the end. The heuristics run
// it as soon as it is ready (the list scheduler's tie goes to the earlier
// node; DFS visits the first sink first), so %a and %b, 1 KiB each, are live
// together: 16 + 1024 + 1024 + 16 = 2080 bytes. The exact search runs %a
// last, after %b has died in @mix: 1056 bytes.
func.func private @small(tensor<4xf32>) -> tensor<4xf32>
func.func private @big(tensor<4xf32>) -> tensor<256xf32>
func.func private @mix(tensor<4xf32>, tensor<256xf32>) -> tensor<4xf32>
func.func @kept_last(%x: tensor<4xf32>) -> (tensor<256xf32>, tensor<4xf32>) {
  %s = func.call @small(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %a = func.call @big(%s) : (tensor<4xf32>) -> tensor<256xf32>
  %b = func.call @big(%s) : (tensor<4xf32>) -> tensor<256xf32>
  %r = func.call @mix(%s, %b) : (tensor<4xf32>, tensor<256xf32>) -> tensor<4xf32>
  func.return %a, %r : tensor<256xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @kept_last(
// CHECK-NEXT:    %s = func.call @small(%x)
// CHECK-NEXT:    %b = func.call @big(%s)
// CHECK-NEXT:    %r = func.call @mix(%s, %b)
// CHECK-NEXT:    %a = func.call @big(%s)
// CHECK-NEXT:    func.return %a, %r
// REMARK: remark: schedule: @kept_last: peak of live tensor bytes 2080 -> 1056, each tensor counted apart (before in-place sharing) (exact)

// -----

// Constants take no workspace (`manifest-alloc` leaves them in read-only
// globals), so the 1 KiB weight %w counts 0 bytes: the peak is %y's 16 bytes
// alone, and loading %w later would gain nothing.
"memref.global"() <{sym_name = "w", type = memref<256xf32>, initial_value, sym_visibility = "private", constant}> : () -> ()
func.func private @dense(tensor<4xf32>, tensor<256xf32>) -> tensor<4xf32>
func.func @weights(%x: tensor<4xf32>) -> tensor<4xf32> {
  %g = memref.get_global @w : memref<256xf32>
  %w = bufferization.to_tensor %g restrict : memref<256xf32> to tensor<256xf32>
  %y = func.call @dense(%x, %w) : (tensor<4xf32>, tensor<256xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @weights(
// REMARK: remark: schedule: @weights: peak of live tensor bytes 16 -> 16, each tensor counted apart (before in-place sharing) (post-order)

// -----

// An scf.if is a barrier: ops before it stay before it and ops after it
// after it, even though moving %b2 above the scf.if would not change the
// results. Within each segment the order already has the lowest peak, so
// nothing moves (the given order wins ties).
func.func private @big(tensor<4xf32>) -> tensor<256xf32>
func.func private @shrink(tensor<256xf32>) -> tensor<4xf32>
func.func @barrier(%c: i1, %x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @big(%x) : (tensor<4xf32>) -> tensor<256xf32>
  %sa = func.call @shrink(%a) : (tensor<256xf32>) -> tensor<4xf32>
  %y = scf.if %c -> (tensor<4xf32>) {
    scf.yield %sa : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  %b2 = func.call @big(%x) : (tensor<4xf32>) -> tensor<256xf32>
  %sb = func.call @shrink(%b2) : (tensor<256xf32>) -> tensor<4xf32>
  func.return %sb : tensor<4xf32>
}

// CHECK-LABEL: func.func @barrier(
// CHECK-NEXT:    %a = func.call @big(%x)
// CHECK-NEXT:    %sa = func.call @shrink(%a)
// CHECK-NEXT:    %y = scf.if %c
// CHECK:         %b2 = func.call @big(%x)
// CHECK-NEXT:    %sb = func.call @shrink(%b2)
// REMARK: remark: schedule: @barrier: peak of live tensor bytes 1040 -> 1040, each tensor counted apart (before in-place sharing) (post-order)

// -----

// A write into memory outside the plan (a TFLite variable's ASSIGN_VARIABLE,
// `bufferization.materialize_in_destination`) is a barrier: @two_branches'
// list order would move %sa above %b, but here the write between them
// keeps it below, so that the read of @state after the write (%again)
// stays after it and the one before it (%old) before it.
"memref.global"() <{sym_name = "state", type = memref<4xf32>, initial_value, sym_visibility = "private"}> : () -> ()
func.func private @read(memref<4xf32>) -> tensor<4xf32>
func.func private @big(tensor<4xf32>) -> tensor<256xf32>
func.func private @shrink(tensor<256xf32>) -> tensor<4xf32>
func.func private @add(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @write_barrier(%x: tensor<4xf32>) -> tensor<4xf32> {
  %g = memref.get_global @state : memref<4xf32>
  %old = func.call @read(%g) : (memref<4xf32>) -> tensor<4xf32>
  %a = func.call @big(%old) : (tensor<4xf32>) -> tensor<256xf32>
  %b = func.call @big(%x) : (tensor<4xf32>) -> tensor<256xf32>
  bufferization.materialize_in_destination %x in restrict writable %g : (tensor<4xf32>, memref<4xf32>) -> ()
  %sa = func.call @shrink(%a) : (tensor<256xf32>) -> tensor<4xf32>
  %sb = func.call @shrink(%b) : (tensor<256xf32>) -> tensor<4xf32>
  %again = func.call @read(%g) : (memref<4xf32>) -> tensor<4xf32>
  %s = func.call @add(%sa, %sb) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = func.call @add(%s, %again) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @write_barrier(
// CHECK:         %old = func.call @read(%g)
// CHECK:         %b = func.call @big(%x)
// CHECK-NEXT:    bufferization.materialize_in_destination %x in restrict writable %g
// CHECK:         %again = func.call @read(%g)
// REMARK: remark: schedule: @write_barrier: peak of live tensor bytes 2048 -> 2048, each tensor counted apart (before in-place sharing) (list, post-order)
