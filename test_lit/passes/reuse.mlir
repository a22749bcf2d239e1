// RUN: memplan-opt %s --reuse --verify-plan --split-input-file | filecheck %s
// RUN: memplan-opt %s --reuse=match-range=0 --verify-plan --split-input-file | filecheck %s --check-prefix=NOREUSE
// RUN: not memplan-opt %s --reuse=match-range=-1 --split-input-file 2>&1 | filecheck %s --check-prefix=ERR

// Every run ends with `verify-plan`, which checks that no two tensors that
// are live together share bytes of a slot.

// ERR: memplan-opt: error: in --reuse=match-range=-1: reuse: match-range must be non-negative (got -1)

// A chain: each op reads the previous result and writes a new one, so an
// op's output never takes its own input's slot (the output is allocated
// before the op, while the input is live). %s2 takes %s0's slot (freed by
// its kill) and %s3 takes %s1's: two slots of 256 bytes, each allocated
// where its first member was and killed where its last member was.
// With match-range=0 nothing is reused.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @chain(%x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  %s2 = memory.alloc_storage : !memory.storage<256>
  %t2 = memory.alloc_tensor %s2[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>)
  memory.kill %s1 : !memory.storage<256>
  %s3 = memory.alloc_storage : !memory.storage<256>
  %t3 = memory.alloc_tensor %s3[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>)
  memory.kill %s2 : !memory.storage<256>
  memory.kill %s3 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %slot = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
// CHECK-NEXT:    %slot_1 = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %t1 = memory.alloc_tensor %slot_1[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
// CHECK-NEXT:    %t2 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>)
// CHECK-NEXT:    %t3 = memory.alloc_tensor %slot_1[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>)
// CHECK-NEXT:    memory.kill %slot : !memory.storage<256>
// CHECK-NEXT:    memory.kill %slot_1 : !memory.storage<256>
// CHECK-NEXT:    func.return

// NOREUSE-LABEL: func.func @chain(
// NOREUSE-NEXT:    %s0 = memory.alloc_storage : !memory.storage<256>
// NOREUSE:         %s1 = memory.alloc_storage : !memory.storage<256>
// NOREUSE:         %s2 = memory.alloc_storage : !memory.storage<256>
// NOREUSE:         %s3 = memory.alloc_storage : !memory.storage<256>

// -----

// match-range 16: the 128-byte request may not take the free 4096-byte slot
// (4096 > 128 * 16 = 2048), so it opens a slot. The 8192-byte request finds
// no free slot of at least 8192 bytes and takes the largest smaller one in
// [8192 / 16, 8192) = 4096 bytes, grown to 8192. The 100-byte request takes
// the 128-byte slot (the smallest free one of at least 100 bytes).
func.func @match_range() {
  %big = memory.alloc_storage : !memory.storage<4096>
  %tb = memory.alloc_tensor %big[0] : !memory.storage<4096> -> memref<4096xi8>
  memory.kill %big : !memory.storage<4096>
  %small = memory.alloc_storage : !memory.storage<128>
  %ts = memory.alloc_tensor %small[0] : !memory.storage<128> -> memref<128xi8>
  memory.kill %small : !memory.storage<128>
  %huge = memory.alloc_storage : !memory.storage<8192>
  %th = memory.alloc_tensor %huge[0] : !memory.storage<8192> -> memref<8192xi8>
  memory.kill %huge : !memory.storage<8192>
  %mid = memory.alloc_storage : !memory.storage<100>
  %tm = memory.alloc_tensor %mid[0] : !memory.storage<100> -> memref<100xi8>
  memory.kill %mid : !memory.storage<100>
  func.return
}

// CHECK-LABEL: func.func @match_range(
// CHECK-NEXT:    %slot = memory.alloc_storage : !memory.storage<8192>
// CHECK-NEXT:    %tb = memory.alloc_tensor %slot[0] : !memory.storage<8192> -> memref<4096xi8>
// CHECK-NEXT:    %slot_1 = memory.alloc_storage : !memory.storage<128>
// CHECK-NEXT:    %ts = memory.alloc_tensor %slot_1[0] : !memory.storage<128> -> memref<128xi8>
// CHECK-NEXT:    %th = memory.alloc_tensor %slot[0] : !memory.storage<8192> -> memref<8192xi8>
// CHECK-NEXT:    memory.kill %slot : !memory.storage<8192>
// CHECK-NEXT:    %tm = memory.alloc_tensor %slot_1[0] : !memory.storage<128> -> memref<100xi8>
// CHECK-NEXT:    memory.kill %slot_1 : !memory.storage<128>
// CHECK-NEXT:    func.return

// NOREUSE-LABEL: func.func @match_range(
// NOREUSE-NOT:     slot
// NOREUSE:         func.return

// -----

// Best fit: when %d (300 bytes) asks, the slots of %a (512), %b (1024) and
// %c (256) are free; it takes the smallest one of at least 300 bytes, %a's.
// %e (2048) then finds only smaller free slots and takes the largest,
// %b's, grown to 2048. %c's slot keeps a single member: left as it was.
func.func @best_fit() {
  %a = memory.alloc_storage : !memory.storage<512>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<512> -> memref<512xi8>
  %b = memory.alloc_storage : !memory.storage<1024>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<1024> -> memref<1024xi8>
  %c = memory.alloc_storage : !memory.storage<256>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<256> -> memref<256xi8>
  memory.kill %a : !memory.storage<512>
  memory.kill %b : !memory.storage<1024>
  memory.kill %c : !memory.storage<256>
  %d = memory.alloc_storage : !memory.storage<300>
  %td = memory.alloc_tensor %d[0] : !memory.storage<300> -> memref<300xi8>
  %e = memory.alloc_storage : !memory.storage<2048>
  %te = memory.alloc_tensor %e[0] : !memory.storage<2048> -> memref<2048xi8>
  memory.kill %d : !memory.storage<300>
  memory.kill %e : !memory.storage<2048>
  func.return
}

// CHECK-LABEL: func.func @best_fit(
// CHECK-NEXT:    %slot = memory.alloc_storage : !memory.storage<512>
// CHECK-NEXT:    %ta = memory.alloc_tensor %slot[0] : !memory.storage<512> -> memref<512xi8>
// CHECK-NEXT:    %slot_1 = memory.alloc_storage : !memory.storage<2048>
// CHECK-NEXT:    %tb = memory.alloc_tensor %slot_1[0] : !memory.storage<2048> -> memref<1024xi8>
// CHECK-NEXT:    %c = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %tc = memory.alloc_tensor %c[0] : !memory.storage<256> -> memref<256xi8>
// CHECK-NEXT:    memory.kill %c : !memory.storage<256>
// CHECK-NEXT:    %td = memory.alloc_tensor %slot[0] : !memory.storage<512> -> memref<300xi8>
// CHECK-NEXT:    %te = memory.alloc_tensor %slot_1[0] : !memory.storage<2048> -> memref<2048xi8>
// CHECK-NEXT:    memory.kill %slot : !memory.storage<512>
// CHECK-NEXT:    memory.kill %slot_1 : !memory.storage<2048>

// -----

// A diamond (cf.cond_br): %s0 dies in the entry block, %s1 and %s2 live in
// the two exclusive successors; all three share one slot. No block of the
// function holds all of them, so the slot is hoisted to the start of the
// entry block (which dominates every block) and is not killed.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @diamond(%c: i1, %x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %s1 : !memory.storage<256>
  cf.br ^bb3
^bb2:
  %s2 = memory.alloc_storage : !memory.storage<256>
  %t2 = memory.alloc_tensor %s2[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t2 : memref<64xf32>)
  memory.kill %s2 : !memory.storage<256>
  cf.br ^bb3
^bb3:
  func.return
}

// CHECK-LABEL: func.func @diamond(
// CHECK-NEXT:    %slot = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    cf.cond_br %c, ^bb1, ^bb2
// CHECK-NEXT:  ^bb1:
// CHECK-NEXT:    %t1 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    cf.br ^bb3
// CHECK-NEXT:  ^bb2:
// CHECK-NEXT:    %t2 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    cf.br ^bb3
// CHECK-NEXT:  ^bb3:
// CHECK-NEXT:    func.return

// -----

// scf.if: the two branch results are live together in op numbers (both
// until %r's last use) but sit in the two exclusive regions of one scf.if,
// so they never conflict and share a slot. The slot must dominate both
// branches and the uses of %r: it goes right before the scf.if. %s3 is
// live with %r (its invoke reads %r) and gets no slot of its own.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @if_results(%c: i1, %x: memref<64xf32>) {
  %r = scf.if %c -> (memref<64xf32>) {
    %s1 = memory.alloc_storage : !memory.storage<256>
    %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
    memory.invoke @k ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>)
    scf.yield %t1 : memref<64xf32>
  } else {
    %s2 = memory.alloc_storage : !memory.storage<256>
    %t2 = memory.alloc_tensor %s2[0] : !memory.storage<256> -> memref<64xf32>
    memory.invoke @k ins(%x : memref<64xf32>) outs(%t2 : memref<64xf32>)
    scf.yield %t2 : memref<64xf32>
  }
  %s3 = memory.alloc_storage : !memory.storage<256>
  %t3 = memory.alloc_tensor %s3[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%r : memref<64xf32>) outs(%t3 : memref<64xf32>)
  memory.kill %s3 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @if_results(
// CHECK-NEXT:    %slot = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %r = scf.if %c -> (memref<64xf32>) {
// CHECK-NEXT:      %t1 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK:         } else {
// CHECK-NEXT:      %t2 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK:         }
// CHECK-NEXT:    %s3 = memory.alloc_storage : !memory.storage<256>

// -----

// A loop: %s0 dies before the loop; in the body %s1 takes its slot and %s3
// takes it again after %s1's kill (%s2 is live with both). The slot holds
// members inside and outside the body, so it is allocated in the function's
// block before the loop and killed after it (a kill inside the body of a
// value defined outside would end it for the next iteration).
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @loop(%x: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  scf.for %i = %c0 to %n step %c1 {
    %s1 = memory.alloc_storage : !memory.storage<256>
    %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
    memory.invoke @k ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>)
    %s2 = memory.alloc_storage : !memory.storage<256>
    %t2 = memory.alloc_tensor %s2[0] : !memory.storage<256> -> memref<64xf32>
    memory.invoke @k ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>)
    memory.kill %s1 : !memory.storage<256>
    %s3 = memory.alloc_storage : !memory.storage<256>
    %t3 = memory.alloc_tensor %s3[0] : !memory.storage<256> -> memref<64xf32>
    memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>)
    memory.kill %s2 : !memory.storage<256>
    memory.kill %s3 : !memory.storage<256>
  }
  func.return
}

// CHECK-LABEL: func.func @loop(
// CHECK:         %slot = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      %t1 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:      memory.invoke
// CHECK-NEXT:      %s2 = memory.alloc_storage : !memory.storage<256>
// CHECK:           %t3 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:      memory.invoke
// CHECK-NEXT:      memory.kill %s2 : !memory.storage<256>
// CHECK-NEXT:    }
// CHECK-NEXT:    memory.kill %slot : !memory.storage<256>
// CHECK-NEXT:    func.return

// -----

// A dynamic-size storage takes no part: it neither takes nor gives a slot.
// %s1 takes %s0's slot across it.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func private @dyn(memref<?xf32>) -> ()
func.func @dynamic(%x: memref<64xf32>, %n: index) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  %d = memory.alloc_storage(%n) : !memory.storage<?>
  %td = memory.alloc_tensor %d[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @dyn outs(%td : memref<?xf32>)
  memory.kill %d : !memory.storage<?>
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %s1 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @dynamic(
// CHECK-NEXT:    %slot = memory.alloc_storage : !memory.storage<256>
// CHECK:         %d = memory.alloc_storage(%n) : !memory.storage<?>
// CHECK:         %t1 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    memory.kill %slot : !memory.storage<256>

// -----

// Mixed alignments: the slot takes the largest member alignment (256) and
// the largest size (200); every member starts at its offset 0. %ta's address
// is now 256-aligned but only needs 16, which it records as `align 16`;
// %tb's storage was 256-aligned already.
func.func @alignments() {
  %a = memory.alloc_storage align 16 : !memory.storage<200>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<200> -> memref<200xi8>
  memory.kill %a : !memory.storage<200>
  %b = memory.alloc_storage align 256 : !memory.storage<128>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<128> -> memref<128xi8>
  memory.kill %b : !memory.storage<128>
  func.return
}

// CHECK-LABEL: func.func @alignments(
// CHECK-NEXT:    %slot = memory.alloc_storage align 256 : !memory.storage<200>
// CHECK-NEXT:    %ta = memory.alloc_tensor %slot[0] align 16 : !memory.storage<200> -> memref<200xi8>
// CHECK-NEXT:    %tb = memory.alloc_tensor %slot[0] : !memory.storage<200> -> memref<128xi8>
// CHECK-NEXT:    memory.kill %slot : !memory.storage<200>

// -----

// Devices have separate free lists: the npu storage may not take the cpu
// slot freed just before it; the second cpu storage does.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @devices(%x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  %n0 = memory.alloc_storage on "npu" : !memory.storage<256>
  %u0 = memory.alloc_tensor %n0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%u0 : memref<64xf32>)
  memory.kill %n0 : !memory.storage<256>
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %s1 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @devices(
// CHECK-NEXT:    %slot = memory.alloc_storage : !memory.storage<256>
// CHECK:         %n0 = memory.alloc_storage on "npu" : !memory.storage<256>
// CHECK:         %t1 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>

// -----

// An escaping value (%t2 is returned) may take a freed slot (%s0's) but
// never gives it back, and that slot is not killed. %s3 takes %s1's slot,
// which is killed after %s3's last use.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @escaping(%x: memref<64xf32>) -> memref<64xf32> {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  %s2 = memory.alloc_storage : !memory.storage<256>
  %t2 = memory.alloc_tensor %s2[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>)
  memory.kill %s1 : !memory.storage<256>
  %s3 = memory.alloc_storage : !memory.storage<256>
  %t3 = memory.alloc_tensor %s3[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>)
  func.return %t2 : memref<64xf32>
}

// CHECK-LABEL: func.func @escaping(
// CHECK-NEXT:    %slot = memory.alloc_storage : !memory.storage<256>
// CHECK:         %slot_1 = memory.alloc_storage : !memory.storage<256>
// CHECK:         %t2 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<64xf32>
// CHECK:         %t3 = memory.alloc_tensor %slot_1[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>)
// CHECK-NEXT:    memory.kill %slot_1 : !memory.storage<256>
// CHECK-NEXT:    func.return %t2 : memref<64xf32>

// -----

// Pools: a pinned storage never takes part; only storages with identical
// candidate lists share a free list, so %f1 takes %f0's slot (keeping
// `pools [@fast]`) and not %g0's.
memory.pool @fast size 4096
memory.pool @slow
func.func @pools() {
  %p = memory.alloc_storage at @slow[0] : !memory.storage<256>
  %tp = memory.alloc_tensor %p[0] : !memory.storage<256> -> memref<256xi8>
  memory.kill %p : !memory.storage<256>
  %f0 = memory.alloc_storage pools [@fast] : !memory.storage<256>
  %t0 = memory.alloc_tensor %f0[0] : !memory.storage<256> -> memref<256xi8>
  memory.kill %f0 : !memory.storage<256>
  %g0 = memory.alloc_storage pools [@slow] : !memory.storage<256>
  %u0 = memory.alloc_tensor %g0[0] : !memory.storage<256> -> memref<256xi8>
  memory.kill %g0 : !memory.storage<256>
  %f1 = memory.alloc_storage pools [@fast] : !memory.storage<256>
  %t1 = memory.alloc_tensor %f1[0] : !memory.storage<256> -> memref<256xi8>
  memory.kill %f1 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @pools(
// CHECK-NEXT:    %p = memory.alloc_storage at @slow[0] : !memory.storage<256>
// CHECK:         %slot = memory.alloc_storage pools [@fast] : !memory.storage<256>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<256xi8>
// CHECK-NEXT:    %g0 = memory.alloc_storage pools [@slow] : !memory.storage<256>
// CHECK:         %t1 = memory.alloc_tensor %slot[0] : !memory.storage<256> -> memref<256xi8>
// CHECK-NEXT:    memory.kill %slot : !memory.storage<256>
