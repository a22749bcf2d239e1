// RUN: memplan-opt %s --coalesce --verify-plan --split-input-file | filecheck %s
// RUN: memplan-opt %s --coalesce=overlap=false --verify-plan --split-input-file | filecheck %s --check-prefix=PART1
// RUN: not memplan-opt %s --coalesce=timeout=-1.0 --split-input-file 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not memplan-opt %s --coalesce=budget=-2 --split-input-file 2>&1 | filecheck %s --check-prefix=BUDGET

// Every run ends with `verify-plan`, which checks that no two tensors that
// are live together share bytes of the merged storages.

// ERR: memplan-opt: error: in --coalesce=timeout=-1.0: coalesce: timeout must be non-negative (got -1.0)
// BUDGET: memplan-opt: error: in --coalesce=budget=-2: coalesce: budget must be non-negative (got -2)

// Straight-line code: %s0 and %s1 are live together (the second invoke reads
// %t0 and writes %t1), %s2 only after %s0's kill. With overlap the region is
// its lower bound, 512 bytes (two live 256-byte storages): %s1 at 0, %s0 at
// 256, and %s2 reuses %s0's bytes at 256. %s1's second tensor moves from 128
// to 0 + 128. Part 1 lays them end to end in IR order: 0, 256, 512 (640
// bytes), so %u1 lands at 256 + 128 = 384. The merged storage takes %s0's
// place and is killed where the last member (%s2) was.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func private @k2(memref<32xf32>, memref<32xf32>) -> ()
func.func @straight_line(%x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %t0 : memref<64xf32>
  memory.kill %s0 : !memory.storage<256>
  %s2 = memory.alloc_storage : !memory.storage<128>
  %t2 = memory.alloc_tensor %s2[0] : !memory.storage<128> -> memref<32xf32>
  %u1 = memory.alloc_tensor %s1[128] : !memory.storage<256> -> memref<32xf32>
  memory.invoke @k2 ins(%u1 : memref<32xf32>) outs(%t2 : memref<32xf32>)
  memory.kill %s1 : !memory.storage<256>
  memory.invoke @k2 ins(%t2 : memref<32xf32>) outs(%t2 : memref<32xf32>)
  memory.kill %s2 : !memory.storage<128>
  func.return
}

// CHECK-LABEL: func.func @straight_line(
// CHECK-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<512>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %t0_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
// CHECK-NEXT:    %t1 = memory.alloc_tensor %t0_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
// CHECK-NEXT:    memory.kill %t0 : memref<64xf32>
// CHECK-NEXT:    %t2 = memory.alloc_tensor %t0_storage[256] : !memory.storage<512> -> memref<32xf32>
// CHECK-NEXT:    %u1 = memory.alloc_tensor %t0_storage[128] : !memory.storage<512> -> memref<32xf32>
// CHECK-NEXT:    memory.invoke @k2 ins(%u1 : memref<32xf32>) outs(%t2 : memref<32xf32>)
// CHECK-NEXT:    memory.invoke @k2 ins(%t2 : memref<32xf32>) outs(%t2 : memref<32xf32>)
// CHECK-NEXT:    memory.kill %t0_storage : !memory.storage<512>
// CHECK-NEXT:    func.return

// PART1-LABEL: func.func @straight_line(
// PART1-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<640>
// PART1-NEXT:    %t0 = memory.alloc_tensor %t0_storage[0] : !memory.storage<640> -> memref<64xf32>
// PART1:         %t1 = memory.alloc_tensor %t0_storage[256] : !memory.storage<640> -> memref<64xf32>
// PART1:         %t2 = memory.alloc_tensor %t0_storage[512] : !memory.storage<640> -> memref<32xf32>
// PART1-NEXT:    %u1 = memory.alloc_tensor %t0_storage[384] : !memory.storage<640> -> memref<32xf32>
// PART1:         memory.kill %t0_storage : !memory.storage<640>
// PART1-NEXT:    func.return

// -----

// A diamond (cf.cond_br): each block is a region. %s0 is used in ^bb1 and
// killed in both successors, so it escapes its block and is left alone. The
// three storages of ^bb1 become one 512-byte storage (at most two are live
// at once: %s3 takes %s1's bytes at 0).
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @diamond(%c: i1, %x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
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
  cf.br ^bb3
^bb2:
  memory.kill %s0 : !memory.storage<256>
  cf.br ^bb3
^bb3:
  func.return
}

// CHECK-LABEL: func.func @diamond(
// CHECK-NEXT:    %s0 = memory.alloc_storage : !memory.storage<256>
// CHECK:         cf.cond_br %c, ^bb1, ^bb2
// CHECK-NEXT:  ^bb1:
// CHECK-NEXT:    %t1_storage = memory.alloc_storage : !memory.storage<512>
// CHECK-NEXT:    %t1 = memory.alloc_tensor %t1_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
// CHECK-NEXT:    memory.kill %s0 : !memory.storage<256>
// CHECK-NEXT:    %t2 = memory.alloc_tensor %t1_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>)
// CHECK-NEXT:    %t3 = memory.alloc_tensor %t1_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>)
// CHECK-NEXT:    memory.kill %t1_storage : !memory.storage<512>
// CHECK-NEXT:    cf.br ^bb3
// CHECK-NEXT:  ^bb2:
// CHECK-NEXT:    memory.kill %s0 : !memory.storage<256>

// -----

// scf.if: each branch is its own region. In the then-branch %s1 and %s2 are
// live together (512 bytes); %s3's tensor is yielded out of the branch, so
// %s3 leaves its region and is left alone. The else-branch's two 128-byte
// storages are live together: 0 and 128 of a 256-byte storage. %s6, alone
// in the function's block, has nothing to merge with.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func private @k2(memref<32xf32>, memref<32xf32>) -> ()
func.func @if_branches(%c: i1, %x: memref<64xf32>) {
  %r = scf.if %c -> (memref<64xf32>) {
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
    scf.yield %t3 : memref<64xf32>
  } else {
    %s4 = memory.alloc_storage : !memory.storage<128>
    %t4 = memory.alloc_tensor %s4[0] : !memory.storage<128> -> memref<32xf32>
    %s5 = memory.alloc_storage : !memory.storage<128>
    %t5 = memory.alloc_tensor %s5[0] : !memory.storage<128> -> memref<32xf32>
    memory.invoke @k2 ins(%t4 : memref<32xf32>) outs(%t5 : memref<32xf32>)
    memory.kill %s4 : !memory.storage<128>
    memory.kill %s5 : !memory.storage<128>
    scf.yield %x : memref<64xf32>
  }
  %s6 = memory.alloc_storage : !memory.storage<256>
  %t6 = memory.alloc_tensor %s6[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%r : memref<64xf32>) outs(%t6 : memref<64xf32>)
  memory.kill %s6 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @if_branches(
// CHECK-NEXT:    %r = scf.if %c -> (memref<64xf32>) {
// CHECK-NEXT:      %t1_storage = memory.alloc_storage : !memory.storage<512>
// CHECK-NEXT:      %t1 = memory.alloc_tensor %t1_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:      memory.invoke @k ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>)
// CHECK-NEXT:      %t2 = memory.alloc_tensor %t1_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:      memory.invoke @k ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>)
// CHECK-NEXT:      %s3 = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:      %t3 = memory.alloc_tensor %s3[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:      memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t3 : memref<64xf32>)
// CHECK-NEXT:      memory.kill %t1_storage : !memory.storage<512>
// CHECK-NEXT:      scf.yield %t3 : memref<64xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %t4_storage = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:      %t4 = memory.alloc_tensor %t4_storage[0] : !memory.storage<256> -> memref<32xf32>
// CHECK-NEXT:      %t5 = memory.alloc_tensor %t4_storage[128] : !memory.storage<256> -> memref<32xf32>
// CHECK-NEXT:      memory.invoke @k2 ins(%t4 : memref<32xf32>) outs(%t5 : memref<32xf32>)
// CHECK-NEXT:      memory.kill %t4_storage : !memory.storage<256>
// CHECK-NEXT:      scf.yield %x : memref<64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %s6 = memory.alloc_storage : !memory.storage<256>

// -----

// A loop body is its own region: %s1 and %s2 are live together in one
// iteration (512 bytes, allocated and killed in the body). In the function's
// block, %s0 is live across the loop while %sa dies before it and %s3 starts
// after it, so %s3 reuses %sa's bytes: 512 bytes instead of 768.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @loop(%x: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %sa = memory.alloc_storage : !memory.storage<256>
  %ta = memory.alloc_tensor %sa[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%ta : memref<64xf32>)
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%ta : memref<64xf32>) outs(%t0 : memref<64xf32>)
  memory.kill %sa : !memory.storage<256>
  scf.for %i = %c0 to %n step %c1 {
    %s1 = memory.alloc_storage : !memory.storage<256>
    %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
    memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
    %s2 = memory.alloc_storage : !memory.storage<256>
    %t2 = memory.alloc_tensor %s2[0] : !memory.storage<256> -> memref<64xf32>
    memory.invoke @k ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>)
    memory.kill %s1 : !memory.storage<256>
    memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t0 : memref<64xf32>)
    memory.kill %s2 : !memory.storage<256>
  }
  %s3 = memory.alloc_storage : !memory.storage<256>
  %t3 = memory.alloc_tensor %s3[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t3 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  memory.kill %s3 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @loop(
// CHECK:         %ta_storage = memory.alloc_storage : !memory.storage<512>
// CHECK-NEXT:    %ta = memory.alloc_tensor %ta_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK:         %t0 = memory.alloc_tensor %ta_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK:         scf.for
// CHECK-NEXT:      %t1_storage = memory.alloc_storage : !memory.storage<512>
// CHECK-NEXT:      %t1 = memory.alloc_tensor %t1_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK:           %t2 = memory.alloc_tensor %t1_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK:           memory.invoke @k ins(%t2 : memref<64xf32>) outs(%t0 : memref<64xf32>)
// CHECK-NEXT:      memory.kill %t1_storage : !memory.storage<512>
// CHECK-NEXT:    }
// CHECK-NEXT:    %t3 = memory.alloc_tensor %ta_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t3 : memref<64xf32>)
// CHECK-NEXT:    memory.kill %ta_storage : !memory.storage<512>
// CHECK-NEXT:    func.return

// -----

// A dynamic-size storage is never merged and, as in TVM, cuts the block in
// two regions: %s0/%s1 before it (live together: 512 bytes) and %s2/%s3
// after it (512 bytes), even though %s1 and %s3 could share bytes.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func private @dyn(memref<?xf32>) -> ()
func.func @dynamic(%x: memref<64xf32>, %n: index) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  %bytes = arith.muli %n, %n : index
  %d = memory.alloc_storage(%bytes) : !memory.storage<?>
  %td = memory.alloc_tensor %d[0](%n) : !memory.storage<?> -> memref<?xf32>
  memory.invoke @dyn outs(%td : memref<?xf32>)
  memory.kill %d : !memory.storage<?>
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

// CHECK-LABEL: func.func @dynamic(
// CHECK-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<512>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %t0_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK:         %t1 = memory.alloc_tensor %t0_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK:         %d = memory.alloc_storage(%bytes) : !memory.storage<?>
// CHECK:         memory.kill %d : !memory.storage<?>
// CHECK-NEXT:    %t2_storage = memory.alloc_storage : !memory.storage<512>
// CHECK-NEXT:    %t2 = memory.alloc_tensor %t2_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke @k ins(%t1 : memref<64xf32>) outs(%t2 : memref<64xf32>)
// CHECK-NEXT:    memory.kill %t0_storage : !memory.storage<512>
// CHECK-NEXT:    %t3 = memory.alloc_tensor %t2_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK:         memory.kill %t2_storage : !memory.storage<512>
// CHECK-NEXT:    func.return

// -----

// Mixed alignments (16, 128, 32): the merged storage is aligned to 128 and
// each member sits at a multiple of its own alignment. %a and %b are live
// together, %c only after %a's kill. With overlap: %b at 0, %a at 256 (a
// multiple of 16), and %c takes %a's bytes at 256 (a multiple of 32): 296
// bytes, the lower bound (%b and %c live together), below the 316 bytes of
// the three side by side. Part 1 in IR order: %a at 0, %b at align(20, 128)
// = 128, %c at 384, 424 bytes.
// A tensor that the 128-aligned merged storage aligns more than its own
// storage did records what it had as `align`: %ta `align 16` (at 256, or 0
// in part 1) and %tc `align 32` (at 256, or 384). %tb was 128-aligned
// already and records nothing. `usmp` splits with those alignments.
func.func private @k(memref<5xf32>, memref<64xf32>) -> ()
func.func private @k2(memref<64xf32>, memref<10xf32>) -> ()
func.func @mixed_alignments() {
  %a = memory.alloc_storage align 16 : !memory.storage<20>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<20> -> memref<5xf32>
  %b = memory.alloc_storage align 128 : !memory.storage<256>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%ta : memref<5xf32>) outs(%tb : memref<64xf32>)
  memory.kill %a : !memory.storage<20>
  %c = memory.alloc_storage align 32 : !memory.storage<40>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<40> -> memref<10xf32>
  memory.invoke @k2 ins(%tb : memref<64xf32>) outs(%tc : memref<10xf32>)
  memory.kill %b : !memory.storage<256>
  memory.kill %c : !memory.storage<40>
  func.return
}

// CHECK-LABEL: func.func @mixed_alignments(
// CHECK-NEXT:    %ta_storage = memory.alloc_storage align 128 : !memory.storage<296>
// CHECK-NEXT:    %ta = memory.alloc_tensor %ta_storage[256] align 16 : !memory.storage<296> -> memref<5xf32>
// CHECK-NEXT:    %tb = memory.alloc_tensor %ta_storage[0] : !memory.storage<296> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    %tc = memory.alloc_tensor %ta_storage[256] align 32 : !memory.storage<296> -> memref<10xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    memory.kill %ta_storage : !memory.storage<296>
// CHECK-NEXT:    func.return

// PART1-LABEL: func.func @mixed_alignments(
// PART1-NEXT:    %ta_storage = memory.alloc_storage align 128 : !memory.storage<424>
// PART1-NEXT:    %ta = memory.alloc_tensor %ta_storage[0] align 16 : !memory.storage<424> -> memref<5xf32>
// PART1-NEXT:    %tb = memory.alloc_tensor %ta_storage[128] : !memory.storage<424> -> memref<64xf32>
// PART1-NEXT:    memory.invoke
// PART1-NEXT:    %tc = memory.alloc_tensor %ta_storage[384] align 32 : !memory.storage<424> -> memref<10xf32>

// -----

// Padding that does not pay: the same three storages all live together.
// The best layout (%b at 0, %c at 256, %a at 304: 324 bytes) is bigger than
// the 316 bytes of the three side by side, so with overlap they are left
// as they are; part 1 merges them anyway (424 bytes, as above).
func.func private @k3(memref<5xf32>, memref<64xf32>, memref<10xf32>) -> ()
func.func @padding_does_not_pay() {
  %a = memory.alloc_storage align 16 : !memory.storage<20>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<20> -> memref<5xf32>
  %b = memory.alloc_storage align 128 : !memory.storage<256>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<256> -> memref<64xf32>
  %c = memory.alloc_storage align 32 : !memory.storage<40>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<40> -> memref<10xf32>
  memory.invoke @k3 ins(%ta, %tb : memref<5xf32>, memref<64xf32>) outs(%tc : memref<10xf32>)
  memory.kill %a : !memory.storage<20>
  memory.kill %b : !memory.storage<256>
  memory.kill %c : !memory.storage<40>
  func.return
}

// CHECK-LABEL: func.func @padding_does_not_pay(
// CHECK-NEXT:    %a = memory.alloc_storage align 16 : !memory.storage<20>
// CHECK-NEXT:    %ta = memory.alloc_tensor %a[0] : !memory.storage<20> -> memref<5xf32>
// CHECK-NEXT:    %b = memory.alloc_storage align 128 : !memory.storage<256>
// CHECK:         %c = memory.alloc_storage align 32 : !memory.storage<40>

// PART1-LABEL: func.func @padding_does_not_pay(
// PART1-NEXT:    %ta_storage = memory.alloc_storage align 128 : !memory.storage<424>

// -----

// Devices: one merged storage per device. The two cpu storages never live
// together (256 bytes); the two npu ones do (512 bytes, `on "npu"`). Each
// merged storage is allocated where its first member was.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @devices(%x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  %n0 = memory.alloc_storage on "npu" : !memory.storage<256>
  %u0 = memory.alloc_tensor %n0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%u0 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  %n1 = memory.alloc_storage on "npu" : !memory.storage<256>
  %u1 = memory.alloc_tensor %n1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%u0 : memref<64xf32>) outs(%u1 : memref<64xf32>)
  memory.kill %n0 : !memory.storage<256>
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%u1 : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %n1 : !memory.storage<256>
  memory.kill %s1 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @devices(
// CHECK-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %t0_storage[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    %u0_storage = memory.alloc_storage on "npu" : !memory.storage<512>
// CHECK-NEXT:    %u0 = memory.alloc_tensor %u0_storage[0] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    %u1 = memory.alloc_tensor %u0_storage[256] : !memory.storage<512> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    %t1 = memory.alloc_tensor %t0_storage[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    memory.kill %u0_storage : !memory.storage<512>
// CHECK-NEXT:    memory.kill %t0_storage : !memory.storage<256>
// CHECK-NEXT:    func.return

// -----

// An escaping value (%t2 is returned) keeps its own storage; the other two
// are merged (live together: 512 bytes).
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
  func.return %t2 : memref<64xf32>
}

// CHECK-LABEL: func.func @escaping(
// CHECK-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<512>
// CHECK:         %s2 = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %t2 = memory.alloc_tensor %s2[0] : !memory.storage<256> -> memref<64xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    memory.kill %t0_storage : !memory.storage<512>
// CHECK-NEXT:    func.return %t2 : memref<64xf32>

// -----

// Pools: a pinned storage (%p) is left alone; storages merge only with
// storages of identical candidate lists, so the two `pools [@fast]` ones
// become one (never live together: 256 bytes) that keeps the candidates,
// and the `pools [@fast, @slow]` one stays.
memory.pool @fast size 4096
memory.pool @slow
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @pools_and_pins(%x: memref<64xf32>) {
  %p = memory.alloc_storage at @slow[0] : !memory.storage<256>
  %tp = memory.alloc_tensor %p[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%tp : memref<64xf32>)
  %f0 = memory.alloc_storage pools [@fast] : !memory.storage<256>
  %t0 = memory.alloc_tensor %f0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%tp : memref<64xf32>) outs(%t0 : memref<64xf32>)
  %g0 = memory.alloc_storage pools [@fast, @slow] : !memory.storage<256>
  %u0 = memory.alloc_tensor %g0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%u0 : memref<64xf32>)
  memory.kill %f0 : !memory.storage<256>
  %f1 = memory.alloc_storage pools [@fast] : !memory.storage<256>
  %t1 = memory.alloc_tensor %f1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%u0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %g0 : !memory.storage<256>
  memory.kill %f1 : !memory.storage<256>
  memory.kill %p : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @pools_and_pins(
// CHECK-NEXT:    %p = memory.alloc_storage at @slow[0] : !memory.storage<256>
// CHECK:         %t0_storage = memory.alloc_storage pools [@fast] : !memory.storage<256>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %t0_storage[0] : !memory.storage<256> -> memref<64xf32>
// CHECK:         %g0 = memory.alloc_storage pools [@fast, @slow] : !memory.storage<256>
// CHECK:         %t1 = memory.alloc_tensor %t0_storage[0] : !memory.storage<256> -> memref<64xf32>
// CHECK:         memory.kill %g0 : !memory.storage<256>
// CHECK-NEXT:    memory.kill %t0_storage : !memory.storage<256>
// CHECK-NEXT:    memory.kill %p : !memory.storage<256>

// -----

// A tensor at a dynamic offset moves with its storage through an
// `arith.addi`: %s1 lands at 256 (after the 256-byte %s0 it is live with),
// so %t1 is at %off + 256.
func.func private @k2(memref<32xf32>, memref<32xf32>) -> ()
func.func @dynamic_offset(%x: memref<32xf32>, %off: index) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<32xf32>
  memory.invoke @k2 ins(%x : memref<32xf32>) outs(%t0 : memref<32xf32>)
  %s1 = memory.alloc_storage : !memory.storage<128>
  %t1 = memory.alloc_tensor %s1[%off] : !memory.storage<128> -> memref<32xf32>
  memory.invoke @k2 ins(%t0 : memref<32xf32>) outs(%t1 : memref<32xf32>)
  memory.kill %s0 : !memory.storage<256>
  memory.kill %s1 : !memory.storage<128>
  func.return
}

// CHECK-LABEL: func.func @dynamic_offset(
// CHECK-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<384>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %t0_storage[0] : !memory.storage<384> -> memref<32xf32>
// CHECK-NEXT:    memory.invoke
// CHECK-NEXT:    %[[SHIFT:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[OFF:.*]] = arith.addi %off, %[[SHIFT]] : index
// CHECK-NEXT:    %t1 = memory.alloc_tensor %t0_storage[%[[OFF]]] : !memory.storage<384> -> memref<32xf32>

// PART1-LABEL: func.func @dynamic_offset(
// PART1-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<384>
// PART1-NEXT:    %t0 = memory.alloc_tensor %t0_storage[0] : !memory.storage<384> -> memref<32xf32>
// PART1-NEXT:    memory.invoke
// PART1-NEXT:    %[[SHIFT:.*]] = arith.constant 256 : index
// PART1-NEXT:    %[[OFF:.*]] = arith.addi %off, %[[SHIFT]] : index

// -----

// Kills: %s0 is killed, %s1 is not and is used last. The merged storage is
// killed after the last op using any member (%s1's invoke), never before a
// use. Without any member kill (@no_kills) the merged storage gets none.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @partly_killed(%x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>)
  func.return
}
func.func @no_kills(%x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  %s1 = memory.alloc_storage : !memory.storage<256>
  %t1 = memory.alloc_tensor %s1[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
  func.return
}

// CHECK-LABEL: func.func @partly_killed(
// CHECK-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<512>
// CHECK:         memory.invoke @k ins(%t0 : memref<64xf32>) outs(%t1 : memref<64xf32>)
// CHECK-NEXT:    memory.invoke @k ins(%x : memref<64xf32>) outs(%t1 : memref<64xf32>)
// CHECK-NEXT:    memory.kill %t0_storage : !memory.storage<512>
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @no_kills(
// CHECK-NEXT:    %t0_storage = memory.alloc_storage : !memory.storage<512>
// CHECK-NOT:     memory.kill
// CHECK:         func.return

// -----

// A storage alone in its region has nothing to merge with: unchanged.
func.func private @k(memref<64xf32>, memref<64xf32>) -> ()
func.func @single(%x: memref<64xf32>) {
  %s0 = memory.alloc_storage : !memory.storage<256>
  %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
  memory.invoke @k ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  memory.kill %s0 : !memory.storage<256>
  func.return
}

// CHECK-LABEL: func.func @single(
// CHECK-NEXT:    %s0 = memory.alloc_storage : !memory.storage<256>
// CHECK-NEXT:    %t0 = memory.alloc_tensor %s0[0] : !memory.storage<256> -> memref<64xf32>
