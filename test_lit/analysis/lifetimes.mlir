// RUN: memplan-opt %s --split-input-file --plan-report='format=json' -o %t.mlir 2>&1 | filecheck %s
// RUN: memplan-opt %s --split-input-file --usmp --plan-report='format=json' -o %t.planned.mlir 2>&1 | filecheck %s --check-prefix=PLAN

// Lifetimes (passes/analysis) seen through plan-report's JSON: `start`/`end`
// are half-open [start, end) op numbers of a pre-order walk of the function
// body, the first body op being 0. The numbers are written next to each op.

// Straight-line code: a storage lives from its alloc_storage to the last use
// of it or of its tensors. %a is last used by the invoke at 4 -> [0, 5); %b
// is last used at 6 -> [2, 7); %c (never used) lives for its own op: [5, 6).
// Tensors start at their alloc_tensor: %ta [1, 5), %tb [3, 7).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @straight_line(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>                               // 0
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>       // 1
  %b = memory.alloc_storage : !memory.storage<64>                               // 2
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>       // 3
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)         // 4
  %c = memory.alloc_storage : !memory.storage<32>                               // 5
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)          // 6
  func.return                                                                   // 7
}
// CHECK-LABEL: "name": "straight_line"
// CHECK:       {"name": "a", "size": 64, "alignment": 64, "start": 0, "end": 5,
// CHECK-NEXT:  {"name": "b", "size": 64, "alignment": 64, "start": 2, "end": 7,
// CHECK-NEXT:  {"name": "c", "size": 32, "alignment": 64, "start": 5, "end": 6,
// CHECK:       {"name": "ta", "storage": "a", "offset": 0, "size": 64, "start": 1, "end": 5}
// CHECK-NEXT:  {"name": "tb", "storage": "b", "offset": 0, "size": 64, "start": 3, "end": 7}

// -----

// A memory.kill ends the lifetime at the kill's own number: [alloc, kill).
// The kill of %a at 3 gives [0, 3), so %b allocated at 4, right after the
// kill, does not overlap it. The kill of %b is 6 -> [4, 6); the tensor %tb is
// not killed itself and ends after its last use at 5 -> [5, 6).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @kills(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>                               // 0
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>       // 1
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)          // 2
  memory.kill %a : !memory.storage<64>                                          // 3
  %b = memory.alloc_storage : !memory.storage<64>                               // 4
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>       // 5
  memory.kill %b : !memory.storage<64>                                          // 6
  func.return                                                                   // 7
}
// CHECK-LABEL: "name": "kills"
// CHECK:       {"name": "a", {{.*}} "start": 0, "end": 3,
// CHECK-NEXT:  {"name": "b", {{.*}} "start": 4, "end": 6,
// CHECK:       {"name": "ta", {{.*}} "start": 1, "end": 3}
// CHECK-NEXT:  {"name": "tb", {{.*}} "start": 5, "end": 6}

// -----

// Loops: a use inside a loop counts at the end of the loop op in the
// allocating block, so %a (allocated at 2, used inside the loop) lives for the
// whole loop. The scf.for is 4 and the last op inside it is the implicit
// scf.yield at 9, so the loop covers [4, 10) and %a is [2, 10). %b, allocated
// and used inside the body, lives only there: its last use is the invoke at
// 8 -> [5, 9). %c after the loop: [10, 11).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @loop(%n: index, %x: memref<16xf32>) {
  %c0 = arith.constant 0 : index                                                // 0
  %c1 = arith.constant 1 : index                                                // 1
  %a = memory.alloc_storage : !memory.storage<64>                               // 2
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>       // 3
  scf.for %i = %c0 to %n step %c1 {                                             // 4
    %b = memory.alloc_storage : !memory.storage<64>                             // 5
    %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>     // 6
    memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)       // 7
    memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)        // 8
  }                                                                             // 9: scf.yield
  %c = memory.alloc_storage : !memory.storage<64>                               // 10
  func.return                                                                   // 11
}
// CHECK-LABEL: "name": "loop"
// CHECK:       {"name": "a", {{.*}} "start": 2, "end": 10,
// CHECK-NEXT:  {"name": "b", {{.*}} "start": 5, "end": 9,
// CHECK-NEXT:  {"name": "c", {{.*}} "start": 10, "end": 11,
// CHECK:       {"name": "ta", {{.*}} "start": 3, "end": 10}
// CHECK-NEXT:  {"name": "tb", {{.*}} "start": 6, "end": 9}

// -----

// scf.for iteration arguments alias what flows into them: %ta enters as the
// init of %acc (the loop is 3), the body yields %acc back, and the loop result
// %r is used at 7. So %a lives from 0 to the use of %r: [0, 8). The loop body
// (4..6) is covered.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @iter_args(%n: index, %x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>                               // 0
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>       // 1
  %c0 = arith.constant 0 : index                                                // 2
  %r = scf.for %i = %c0 to %n step %n iter_args(%acc = %ta) -> (memref<16xf32>) { // 3
    %c1 = arith.constant 1 : index                                              // 4
    memory.invoke @k ins(%acc : memref<16xf32>) outs(%x : memref<16xf32>)       // 5
    scf.yield %acc : memref<16xf32>                                             // 6
  }
  memory.invoke @k ins(%r : memref<16xf32>) outs(%x : memref<16xf32>)          // 7
  func.return                                                                   // 8
}
// CHECK-LABEL: "name": "iter_args"
// CHECK:       {"name": "a", {{.*}} "start": 0, "end": 8,
// CHECK:       {"name": "ta", {{.*}} "start": 1, "end": 8}

// -----

// A storage allocated inside a loop body and carried to the next iteration
// (yielded into an iteration argument) outlives its iteration: it lives from
// the start of the loop (2) to the last use of the loop result (8): [2, 9).
// The next iteration reads %acc before it allocates %s again, so the previous
// instance is dead by then and one static place holds every instance (read
// after, two would be live at once: usmp refuses that, see
// test_lit/passes/usmp-loop-carried.mlir).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @loop_carried(%n: index, %x: memref<16xf32>) {
  %c0 = arith.constant 0 : index                                                // 0
  %c1 = arith.constant 1 : index                                                // 1
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (memref<16xf32>) { // 2
    memory.invoke @k ins(%acc : memref<16xf32>) outs(%x : memref<16xf32>)       // 3
    %s = memory.alloc_storage : !memory.storage<64>                             // 4
    %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>      // 5
    memory.invoke @k ins(%x : memref<16xf32>) outs(%t : memref<16xf32>)         // 6
    scf.yield %t : memref<16xf32>                                               // 7
  }
  memory.invoke @k ins(%r : memref<16xf32>) outs(%x : memref<16xf32>)          // 8
  func.return                                                                   // 9
}
// CHECK-LABEL: "name": "loop_carried"
// CHECK:       {"name": "s", {{.*}} "start": 2, "end": 9, {{.*}} "branch": []}
// CHECK:       {"name": "t", {{.*}} "start": 2, "end": 9}

// -----

// scf.if: the storages of the two branches never conflict, which `branch`
// records as (if's number, region index) = [1, 0] and [1, 1]. %d and %e are
// yielded out of their branch into the if's result %r, used at 10: both live
// to [.., 11). %a is used inside the then-branch only, so it lives to the end
// of the scf.if, the last op of which is the else-branch's yield at 9: [0, 10).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @if_else(%c: i1, %x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>                               // 0
  %r = scf.if %c -> (memref<16xf32>) {                                          // 1
    %d = memory.alloc_storage : !memory.storage<64>                             // 2
    %td = memory.alloc_tensor %d[0] : !memory.storage<64> -> memref<16xf32>     // 3
    %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>     // 4
    memory.invoke @k ins(%ta : memref<16xf32>) outs(%td : memref<16xf32>)       // 5
    scf.yield %td : memref<16xf32>                                              // 6
  } else {
    %e = memory.alloc_storage : !memory.storage<128>                            // 7
    %te = memory.alloc_tensor %e[0] : !memory.storage<128> -> memref<16xf32>    // 8
    scf.yield %te : memref<16xf32>                                              // 9
  }
  memory.invoke @k ins(%r : memref<16xf32>) outs(%x : memref<16xf32>)          // 10
  func.return                                                                   // 11
}
// CHECK-LABEL: "name": "if_else"
// CHECK:       {"name": "a", {{.*}} "start": 0, "end": 10, {{.*}} "branch": []}
// CHECK-NEXT:  {"name": "d", {{.*}} "start": 2, "end": 11, {{.*}} "branch": {{\[\[1, 0\]\]}}}
// CHECK-NEXT:  {"name": "e", {{.*}} "start": 7, "end": 11, {{.*}} "branch": {{\[\[1, 1\]\]}}}

// -----

// Nested scf.if: paths list the enclosing ifs outermost first.
func.func @nested_if(%c: i1) {
  scf.if %c {                                                                   // 0
    scf.if %c {                                                                 // 1
      %s = memory.alloc_storage : !memory.storage<64>                           // 2
      scf.yield                                                                 // 3
    } else {
      %t = memory.alloc_storage : !memory.storage<64>                           // 4
      scf.yield                                                                 // 5
    }
    scf.yield                                                                   // 6
  }
  func.return                                                                   // 7
}
// CHECK-LABEL: "name": "nested_if"
// CHECK:       {"name": "s", {{.*}} "start": 2, "end": 3, {{.*}} "branch": {{\[\[0, 0\], \[1, 0\]\]}}}
// CHECK-NEXT:  {"name": "t", {{.*}} "start": 4, "end": 5, {{.*}} "branch": {{\[\[0, 0\], \[1, 1\]\]}}}

// -----

// A CFG diamond: liveness is a backward fixpoint over blocks and the interval
// covers every block the value is live in. %a is live out of ^bb0 into ^bb1
// and ^bb2 (both use it) and into ^bb3 (used at 8): [0, 9), covering ^bb1 (3..4) and
// ^bb2 (5..7). %b, allocated in ^bb2, is passed to ^bb3's argument %m, used
// at 9: its interval runs from 5 to 10, and covers ^bb3 from its start.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @diamond(%c: i1, %x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>                               // 0
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>       // 1
  cf.cond_br %c, ^bb1, ^bb2                                                     // 2
^bb1:
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)          // 3
  cf.br ^bb3(%x : memref<16xf32>)                                               // 4
^bb2:
  %b = memory.alloc_storage : !memory.storage<64>                               // 5
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>       // 6
  cf.br ^bb3(%tb : memref<16xf32>)                                              // 7
^bb3(%m: memref<16xf32>):
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%x : memref<16xf32>)          // 8
  memory.invoke @k ins(%m : memref<16xf32>) outs(%x : memref<16xf32>)           // 9
  func.return                                                                   // 10
}
// CHECK-LABEL: "name": "diamond"
// CHECK:       {"name": "a", {{.*}} "start": 0, "end": 9,
// CHECK-NEXT:  {"name": "b", {{.*}} "start": 5, "end": 10,
// CHECK:       {"name": "ta", {{.*}} "start": 1, "end": 9}
// CHECK-NEXT:  {"name": "tb", {{.*}} "start": 6, "end": 10}

// -----

// A CFG loop: ^bb1 (ops 2..4) branches back to itself. %a is used in the
// loop (by the alloc_tensor at 2), so it is live out of ^bb1 around the back
// edge and covers the whole block: [0, 5). %b is allocated in the loop and
// never used: [3, 4).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @cfg_loop(%c: i1, %x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>                               // 0
  cf.br ^bb1                                                                    // 1
^bb1:
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>       // 2
  %b = memory.alloc_storage : !memory.storage<64>                               // 3
  cf.cond_br %c, ^bb1, ^bb2                                                     // 4
^bb2:
  func.return                                                                   // 5
}
// CHECK-LABEL: "name": "cfg_loop"
// CHECK:       {"name": "a", {{.*}} "start": 0, "end": 5,
// CHECK-NEXT:  {"name": "b", {{.*}} "start": 3, "end": 4,

// -----

// A value defined in a later-numbered block and branched back to an earlier
// one: ^bb2 (ops 4..6) allocates %s and passes its tensor to ^bb1's argument
// %m, used at 2. The interval is the hull of every live point, so it starts
// at ^bb1's start (2) although the allocation is 4, and ends after the branch
// at 6: [2, 7).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @back_edge(%c: i1, %x: memref<16xf32>) {
  %c0 = arith.constant 0 : index                                                // 0
  cf.br ^bb1(%x : memref<16xf32>)                                               // 1
^bb1(%m: memref<16xf32>):
  memory.invoke @k ins(%m : memref<16xf32>) outs(%x : memref<16xf32>)           // 2
  cf.cond_br %c, ^bb2, ^bb3                                                     // 3
^bb2:
  %s = memory.alloc_storage : !memory.storage<64>                               // 4
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>        // 5
  cf.br ^bb1(%t : memref<16xf32>)                                               // 6
^bb3:
  func.return                                                                   // 7
}
// CHECK-LABEL: "name": "back_edge"
// CHECK:       {"name": "s", {{.*}} "start": 2, "end": 7,

// -----

// Views alias their source: a use of %v (a memref.subview of %t) or of %w (a
// memref.reinterpret_cast of %v) is a use of %t and of its storage %s. The
// last use is %w's at 5: %s [0, 6), %t [1, 6). %u's storage %q ends at the
// use of its collapse_shape view %f at 9: [6, 10).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func private @k2(memref<8xf32>, memref<16xf32>)
func.func @views(%x: memref<16xf32>) {
  %s = memory.alloc_storage : !memory.storage<64>                               // 0
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>        // 1
  %v = memref.subview %t[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>> // 2
  %w = memref.reinterpret_cast %v to offset: [0], sizes: [8], strides: [1] : memref<8xf32, strided<[1]>> to memref<8xf32> // 3
  memory.invoke @k ins(%x : memref<16xf32>) outs(%x : memref<16xf32>)           // 4
  memory.invoke @k2 ins(%w : memref<8xf32>) outs(%x : memref<16xf32>)          // 5
  %q = memory.alloc_storage : !memory.storage<64>                               // 6
  %u = memory.alloc_tensor %q[0] : !memory.storage<64> -> memref<4x4xf32>       // 7
  %f = memref.collapse_shape %u [[0, 1]] : memref<4x4xf32> into memref<16xf32>  // 8
  memory.invoke @k ins(%f : memref<16xf32>) outs(%x : memref<16xf32>)           // 9
  func.return                                                                   // 10
}
// CHECK-LABEL: "name": "views"
// CHECK:       {"name": "s", {{.*}} "start": 0, "end": 6,
// CHECK-NEXT:  {"name": "q", {{.*}} "start": 6, "end": 10,
// CHECK:       {"name": "t", {{.*}} "start": 1, "end": 6}
// CHECK-NEXT:  {"name": "u", {{.*}} "start": 7, "end": 10}

// -----

// Escaping values live to the end of the function (12 ops here, so end 12):
// %r is returned, %p's tensor is stored into a memref of memrefs, %q's tensor
// is passed to a call that returns a memref (which may be the argument).
// %n only goes to a call with no results: a plain use at 7, so [5, 8).
func.func private @wrap(memref<16xf32>) -> memref<16xf32>
func.func private @use(memref<16xf32>)
func.func @escapes(%box: memref<memref<16xf32>>) -> memref<16xf32> {
  %r = memory.alloc_storage : !memory.storage<64>                               // 0
  %tr = memory.alloc_tensor %r[0] : !memory.storage<64> -> memref<16xf32>       // 1
  %p = memory.alloc_storage : !memory.storage<64>                               // 2
  %tp = memory.alloc_tensor %p[0] : !memory.storage<64> -> memref<16xf32>       // 3
  memref.store %tp, %box[] : memref<memref<16xf32>>                             // 4
  %n = memory.alloc_storage : !memory.storage<64>                               // 5
  %tn = memory.alloc_tensor %n[0] : !memory.storage<64> -> memref<16xf32>       // 6
  func.call @use(%tn) : (memref<16xf32>) -> ()                                  // 7
  %q = memory.alloc_storage : !memory.storage<64>                               // 8
  %tq = memory.alloc_tensor %q[0] : !memory.storage<64> -> memref<16xf32>       // 9
  %w = func.call @wrap(%tq) : (memref<16xf32>) -> memref<16xf32>                // 10
  func.return %tr : memref<16xf32>                                              // 11
}
// CHECK-LABEL: "name": "escapes"
// CHECK:       {"name": "r", {{.*}} "start": 0, "end": 12, {{.*}} "escapes": true,
// CHECK-NEXT:  {"name": "p", {{.*}} "start": 2, "end": 12, {{.*}} "escapes": true,
// CHECK-NEXT:  {"name": "n", {{.*}} "start": 5, "end": 8, {{.*}} "escapes": false,
// CHECK-NEXT:  {"name": "q", {{.*}} "start": 8, "end": 12, {{.*}} "escapes": true,

// -----

// scf.while: the init flows into the `before` region's argument, the
// scf.condition operand into the `after` argument and the loop result. %a
// enters as the init and comes out as %r, used at 7: [0, 8).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @while_loop(%c: i1, %x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>                               // 0
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>       // 1
  %r = scf.while (%arg = %ta) : (memref<16xf32>) -> memref<16xf32> {            // 2
    scf.condition(%c) %arg : memref<16xf32>                                     // 3
  } do {
  ^bb0(%body: memref<16xf32>):
    memory.invoke @k ins(%body : memref<16xf32>) outs(%x : memref<16xf32>)      // 4
    scf.yield %body : memref<16xf32>                                            // 5
  }
  %c0 = arith.constant 0 : index                                                // 6
  memory.invoke @k ins(%r : memref<16xf32>) outs(%x : memref<16xf32>)          // 7
  func.return                                                                   // 8
}
// CHECK-LABEL: "name": "while_loop"
// CHECK:       {"name": "a", {{.*}} "start": 0, "end": 8,

// -----

// scf.execute_region yields its storage's tensor out: %s lives from 1 to the
// use of %r at 4: [1, 5). No exclusive branch (a single region).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @execute_region(%x: memref<16xf32>) {
  %r = scf.execute_region -> memref<16xf32> {                                   // 0
    %s = memory.alloc_storage : !memory.storage<64>                             // 1
    %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>      // 2
    scf.yield %t : memref<16xf32>                                               // 3
  }
  memory.invoke @k ins(%r : memref<16xf32>) outs(%x : memref<16xf32>)          // 4
  func.return                                                                   // 5
}
// CHECK-LABEL: "name": "execute_region"
// CHECK:       {"name": "s", {{.*}} "start": 1, "end": 5, {{.*}} "branch": []}

// -----

// A caller and its callee on the module time line (analyze_module; the JSON
// shows each function's own numbers). @main is top level, so its ops take
// module times 0, 1, ... up to its call at 6. @callee, called once, is laid
// out inline right after the call: its ops 0..8 take times 7..15, and @main's
// ops after the call move up by 9 (op 7 -> 16, ...). Every storage keeps its
// own interval, placed in its function's segment: @callee's %a [0, 3) ->
// [7, 10) and %b [4, 7) -> [11, 14) do not overlap, so they may share bytes
// as when @callee is planned alone. @main's %across [4, 8) is live across the
// call (it is even passed to it): on the module time line it covers the
// whole callee segment, [4, 17), so it conflicts with both. %before [0, 3)
// and %after [9, 10) -> [18, 19) conflict with neither. The module's lower
// bound is 128 bytes (%across and one of %a, %b; it would be 192 if every
// callee storage spanned the call) and usmp (second RUN) reaches it: %a and
// %b share offset 64, @main's storages take 0.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @callee(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>                               // 0
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>       // 1
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)         // 2
  memory.kill %a : !memory.storage<64>                                          // 3
  %b = memory.alloc_storage : !memory.storage<64>                               // 4
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>       // 5
  memory.invoke @k ins(%x : memref<16xf32>) outs(%tb : memref<16xf32>)         // 6
  memory.kill %b : !memory.storage<64>                                          // 7
  func.return                                                                   // 8
}
func.func @main(%x: memref<16xf32>) {
  %before = memory.alloc_storage : !memory.storage<64>                          // 0
  %t0 = memory.alloc_tensor %before[0] : !memory.storage<64> -> memref<16xf32>  // 1
  memory.invoke @k ins(%x : memref<16xf32>) outs(%t0 : memref<16xf32>)         // 2
  memory.kill %before : !memory.storage<64>                                     // 3
  %across = memory.alloc_storage : !memory.storage<64>                          // 4
  %t1 = memory.alloc_tensor %across[0] : !memory.storage<64> -> memref<16xf32>  // 5
  func.call @callee(%t1) : (memref<16xf32>) -> ()                               // 6
  memory.invoke @k ins(%t1 : memref<16xf32>) outs(%x : memref<16xf32>)         // 7
  memory.kill %across : !memory.storage<64>                                     // 8
  %after = memory.alloc_storage : !memory.storage<64>                           // 9
  func.return                                                                   // 10
}
// CHECK-LABEL: "name": "callee"
// CHECK:       {"name": "a", {{.*}} "start": 0, "end": 3,
// CHECK-NEXT:  {"name": "b", {{.*}} "start": 4, "end": 7,
// CHECK-LABEL: "name": "main"
// CHECK:       {"name": "before", {{.*}} "start": 0, "end": 3,
// CHECK-NEXT:  {"name": "across", {{.*}} "start": 4, "end": 8,
// CHECK-NEXT:  {"name": "after", {{.*}} "start": 9, "end": 10,
// PLAN-LABEL:  "name": "callee"
// PLAN:        {"name": "a", {{.*}} "pool": "workspace_cpu", "offset": 64,
// PLAN-NEXT:   {"name": "b", {{.*}} "pool": "workspace_cpu", "offset": 64,
// PLAN-LABEL:  "name": "main"
// PLAN:        {"name": "before", {{.*}} "pool": "workspace_cpu", "offset": 0,
// PLAN-NEXT:   {"name": "across", {{.*}} "pool": "workspace_cpu", "offset": 0,
// PLAN-NEXT:   {"name": "after", {{.*}} "pool": "workspace_cpu", "offset": 0,
// PLAN:        "pools": [
// PLAN-NEXT:   {"name": "workspace_cpu", "size": null, "used": 128, "lower_bound": 128, "no_planning": 320, "base_alignment": 64, "buffer_count": 5}
