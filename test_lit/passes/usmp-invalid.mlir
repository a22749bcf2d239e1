// RUN: not memplan-opt %s --usmp --split-input-file 2>&1 | filecheck %s --check-prefix=ERR

// Three 64-byte storages live together at op 4 need 192 bytes; @sram has
// 128. %big is left over (the other two fill the pool); the diagnostic
// names it, its size and lifetime, the pool's size and peak, and the live
// storages that make the pool impossible. No further hint: it is a proof.
memory.pool @sram size 128
func.func private @k3(memref<16xf32>, memref<16xf32>, memref<16xf32>)
func.func @overflow() {
  %a = memory.alloc_storage : !memory.storage<64>
  %b = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  %big = memory.alloc_storage : !memory.storage<64>
  %tbig = memory.alloc_tensor %big[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k3 ins(%ta, %tb : memref<16xf32>, memref<16xf32>) outs(%tbig : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  memory.kill %b : !memory.storage<64>
  memory.kill %big : !memory.storage<64>
  func.return
}
// ERR:      usmp-invalid.mlir:[[# @LINE - 8]]:3: error: usmp: storage %big in @overflow (64 bytes, align 64, device "cpu", live [4, 9)) fits in none of its candidate pools:
// ERR-NEXT:   %big = memory.alloc_storage : !memory.storage<64>
// ERR-NEXT:   ^
// ERR-NEXT:   @sram: size 128, peak 128; impossible: live together with %a (64 bytes, live [0, 7)) and %b (64 bytes, live [1, 8)), it needs 192 bytes
// ERR-NEXT: // -----

// -----

// Fallback does not help when every candidate is impossible: %big (96
// bytes) is larger than @dtcm (64), so it may only use @sram, where %a and
// %b (pinned to @sram by `pools`) are live with it: 64 + 64 + 96 = 224 >
// 128. The greedy attempt placed %big first, so %a is the one named; %b is
// left over too.
memory.pool @dtcm size 64
memory.pool @sram size 128
func.func private @k3(memref<16xf32>, memref<16xf32>, memref<16xf32>)
func.func @fallback_overflow() {
  %a = memory.alloc_storage pools [@sram] : !memory.storage<64>
  %b = memory.alloc_storage pools [@sram] : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  %big = memory.alloc_storage : !memory.storage<96>
  %tbig = memory.alloc_tensor %big[0] : !memory.storage<96> -> memref<16xf32>
  memory.invoke @k3 ins(%ta, %tb : memref<16xf32>, memref<16xf32>) outs(%tbig : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  memory.kill %b : !memory.storage<64>
  memory.kill %big : !memory.storage<96>
  func.return
}
// ERR:      usmp: storage %a in @fallback_overflow (64 bytes, align 64, device "cpu", live [0, 7)) fits in none of its candidate pools:
// ERR-NEXT:   {{.*}} = memory.alloc_storage {{.*}}
// ERR-NEXT:   {{ *}}^
// ERR-NEXT:   @sram: size 128, peak 96; impossible: live together with %b (64 bytes, live [1, 8)) and %big (96 bytes, live [4, 9)), it needs 224 bytes
// ERR-NEXT:   (1 other storage did not fit either)
// ERR-NEXT: // -----

// -----

// Candidate priority keeps %x (the largest) in @fast, where neither %y nor
// %z fits beside it; both move to @slow (384 bytes), too small for 512. A
// plan exists (%y and %z in @fast, %x in @slow), so the error is no claim
// of infeasibility: it says the choice of pools was not searched.
memory.pool @fast size 512
memory.pool @slow size 384
func.func private @k3(memref<16xf32>, memref<16xf32>, memref<16xf32>)
func.func @priority_choice() {
  %x = memory.alloc_storage : !memory.storage<384>
  %y = memory.alloc_storage : !memory.storage<256>
  %tx = memory.alloc_tensor %x[0] : !memory.storage<384> -> memref<16xf32>
  %ty = memory.alloc_tensor %y[0] : !memory.storage<256> -> memref<16xf32>
  %z = memory.alloc_storage : !memory.storage<256>
  %tz = memory.alloc_tensor %z[0] : !memory.storage<256> -> memref<16xf32>
  memory.invoke @k3 ins(%tx, %ty : memref<16xf32>, memref<16xf32>) outs(%tz : memref<16xf32>)
  memory.kill %x : !memory.storage<384>
  memory.kill %y : !memory.storage<256>
  memory.kill %z : !memory.storage<256>
  func.return
}
// ERR:      usmp: storage %z in @priority_choice (256 bytes, align 64, device "cpu", live [4, 9)) fits in none of its candidate pools:
// ERR-NEXT:   %z = memory.alloc_storage : !memory.storage<256>
// ERR-NEXT:   ^
// ERR-NEXT:   @fast: size 512, peak 384; no gap found by algorithm=auto
// ERR-NEXT:   @slow: size 384, peak 256; no gap found by algorithm=auto
// ERR-NEXT:   no offsets fit the pools candidate priority chose (largest storages kept first); other choices are not searched, so this is no proof: `pools [...]` on a storage fixes its choice
// ERR-NOT:    proved
// ERR-NEXT: // -----

// -----

// A storage larger than every candidate pool.
memory.pool @dtcm size 32
memory.pool @sram size 48
func.func @too_large() {
  %a = memory.alloc_storage : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  func.return
}
// ERR:      usmp: storage %a in @too_large (64 bytes, align 64, device "cpu", live [0, 1)) fits in none of its candidate pools:
// ERR-NEXT:   {{.*}} = memory.alloc_storage {{.*}}
// ERR-NEXT:   {{ *}}^
// ERR-NEXT:   @dtcm: size 32, peak 0; the storage is larger than the pool
// ERR-NEXT:   @sram: size 48, peak 0; the storage is larger than the pool

// -----

// No pool targets the storage's device.
memory.pool @sram size 128 targets ["cpu"]
func.func @no_pool_for_device() {
  %a = memory.alloc_storage on "npu" : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  func.return
}
// ERR:      usmp: storage %a in @no_pool_for_device (64 bytes, align 64, device "npu", live [0, 1)) has no pool it may use:
// ERR-NEXT:   {{.*}} = memory.alloc_storage {{.*}}
// ERR-NEXT:   {{ *}}^
// ERR-NEXT:   @sram: targets ["cpu"]

// -----

// A written storage never goes to a read-only pool, even when it is the
// only one.
memory.pool @flash access ro
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @written_into_ro(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  func.return
}
// ERR:      usmp: storage %a in @written_into_ro (64 bytes, align 64, device "cpu", live [0, 3)) has no pool it may use:
// ERR-NEXT:   {{.*}} = memory.alloc_storage {{.*}}
// ERR-NEXT:   {{ *}}^
// ERR-NEXT:   @flash: read-only and the storage is written

// -----

// Pinned storages are kept as they are: two pinned at the same bytes while
// live together cannot be planned around.
memory.pool @sram size 256
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @clashing_pins() {
  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %b = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  func.return
}
// ERR:      usmp: the pinned storages break the plan's rules (fix the pins or use replan=true):
// ERR-NEXT:   {{.*}} = memory.alloc_storage {{.*}}
// ERR-NEXT:   {{ *}}^
// ERR-NEXT:   storage %a in @clashing_pins (bytes [0, 64) of @sram, live [0, 5)) and storage %b in @clashing_pins (bytes [0, 64) of @sram, live [2, 5)) are live together but share bytes

// -----

// Two 2^62-byte storages live together need 2^63 bytes: past the i64 range
// of offsets and `used`, so the storage that ends there is an error (never
// a negative `used`).
func.func private @k2(memref<4xf32>, memref<4xf32>)
func.func @two_halves() {
  %a = memory.alloc_storage : !memory.storage<4611686018427387904>
  %b = memory.alloc_storage : !memory.storage<4611686018427387904>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<4611686018427387904> -> memref<4xf32>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<4611686018427387904> -> memref<4xf32>
  memory.invoke @k2 ins(%ta : memref<4xf32>) outs(%tb : memref<4xf32>)
  func.return
}
// ERR:      usmp-invalid.mlir:[[# @LINE - 6]]:3: error: usmp: storage %b (4611686018427387904 bytes) at offset 4611686018427387904 of @workspace_cpu ends at byte 9223372036854775808, which exceeds 2^63-1 bytes
// ERR-NOT:  used must be non-negative

// -----

// A heuristic that finds no gap says so, and that it proves nothing (the
// same module plans with every other algorithm: usmp-algorithms.mlir).
// RUN: not memplan-opt %S/usmp-algorithms.mlir --usmp=algorithm=greedy-by-size 2>&1 | filecheck %s --check-prefix=GREEDY
// GREEDY:      usmp-algorithms.mlir:{{[0-9]+}}:3: error: usmp: storage %c in @tight (64 bytes, align 64, device "cpu", live [6, 10)) fits in none of its candidate pools:
// GREEDY-NEXT:   %c = memory.alloc_storage : !memory.storage<64>
// GREEDY-NEXT:   ^
// GREEDY-NEXT:   @sram: size 384, peak 384; no gap found by algorithm=greedy-by-size
// GREEDY-NEXT:   (a heuristic's failure is no proof: algorithm=exact searches every plan)

// Options are checked.
// RUN: not memplan-opt %S/usmp-algorithms.mlir --usmp=timeout=-1.5 2>&1 | filecheck %s --check-prefix=TIMEOUT
// TIMEOUT: memplan-opt: error: in --usmp=timeout=-1.5: usmp: timeout must be non-negative (got -1.5)
// RUN: not memplan-opt %S/usmp-algorithms.mlir --usmp=budget=-3 2>&1 | filecheck %s --check-prefix=BUDGET
// BUDGET: memplan-opt: error: in --usmp=budget=-3: usmp: budget must be non-negative (got -3)

// budget=0 leaves auto its first greedy plan, which has no gap for %c (the
// search would find one); the message names the budget, not a timeout.
// RUN: not memplan-opt %S/usmp-algorithms.mlir --usmp=budget=0 2>&1 | filecheck %s --check-prefix=NOBUDGET
// NOBUDGET:      error: usmp: storage %c in @tight
// NOBUDGET:      @sram: size 384, peak 384; no gap found by algorithm=auto
// NOBUDGET-NOT:  remark

// An explicit timeout still works, and when the clock cuts the search short
// the pass says so in a remark at the function (timeout=0: no search at all).
// RUN: not memplan-opt %S/usmp-algorithms.mlir --usmp=timeout=0 2>&1 | filecheck %s --check-prefix=CUT
// CUT:      usmp-algorithms.mlir:{{[0-9]+}}:1: remark: usmp: @tight: timeout=0 cut the search short: the plan depends on machine speed and load (without timeout the search stops on budget={{[0-9]+}}, the same everywhere)
// CUT:      error: usmp: storage %c in @tight
// RUN: not memplan-opt %S/usmp-algorithms.mlir --usmp=algorithm=best 2>&1 | filecheck %s --check-prefix=ALGORITHM
// ALGORITHM: memplan-opt: error: in --usmp=algorithm=best: usmp: algorithm must be one of greedy-by-size, greedy-by-conflicts, hill-climb, exact, auto (got 'best')
