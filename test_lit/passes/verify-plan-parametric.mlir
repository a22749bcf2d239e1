// The dialect's verifier refuses a reserve above its max or naming an
// undeclared dim first; --disable-verify shows verify-plan's own check.
// RUN: not memplan-opt %s --verify-plan --split-input-file --disable-verify 2>&1 | filecheck %s
// The hand-written parametric plan of dynamic_batch.onnx is valid:
// RUN: memplan-opt %S/../Inputs/parametric-batch.mlir --verify-plan | filecheck %s --check-prefix=BATCH
// BATCH-LABEL: memory.pool @workspace_cpu targets ["cpu"] used 5120
// BATCH:       memory.slot = 2 : i64, memory.above = array<i64: 0, 1>

// A valid program (what usmp{parametric=true} writes): N in 1..8; %a, %s
// and %b are live together, %b above both (slot 3 above 0 and 2), %c with
// nothing; the `at` offsets are the program at the reserved sizes.
memory.pool @sram align 64 used 1024
func.func @valid(%na: index, %nb: index, %nc: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>}} {
  %a = memory.alloc_storage(%na) max 512 at @sram[0] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %s = memory.alloc_storage at @sram[512] {memory.slot = 2 : i64, memory.above = array<i64: 0>} : !memory.storage<256>
  %b = memory.alloc_storage(%nb) max 256 at @sram[768] {memory.reserve = "32*N", memory.slot = 3 : i64, memory.above = array<i64: 0, 2>} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  memory.kill %s : !memory.storage<256>
  memory.kill %b : !memory.storage<?>
  %c = memory.alloc_storage(%nc) max 1024 at @sram[0] {memory.reserve = "128*N", memory.slot = 1 : i64, memory.above = array<i64>} : !memory.storage<?>
  memory.kill %c : !memory.storage<?>
  func.return
}
// CHECK-LABEL: func.func @valid

// -----

// A dropped `above` entry: %b conflicts with %s (slot 0) and with %a (slot
// 1) but lists only %a. At the reserved sizes %b still sits at 512 (above
// %a's 512 bytes), so the `at` plan is valid; at N = 1 it sits at 64, inside
// %s's bytes [0, 256).
memory.pool @sram align 64 used 768
func.func @dropped_above(%na: index, %nb: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>}} {
  %a = memory.alloc_storage(%na) max 512 at @sram[0] {memory.reserve = "64*N", memory.slot = 1 : i64, memory.above = array<i64>} : !memory.storage<?>
  %b = memory.alloc_storage(%nb) max 256 at @sram[512] {memory.reserve = "32*N", memory.slot = 2 : i64, memory.above = array<i64: 1>} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  %s = memory.alloc_storage at @sram[0] {memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<256>
  memory.kill %s : !memory.storage<256>
  memory.kill %b : !memory.storage<?>
  func.return
}
// CHECK:      verify-plan-parametric.mlir:[[# @LINE - 7]]:3: error: verify-plan: storage %b in @dropped_above (slot 2 of @sram, live [1, 5)) and storage %s in @dropped_above (slot 0 of @sram, live [3, 4)) are live together but their offsets are not ordered by memory.above
// CHECK-NEXT: %b = memory.alloc_storage
// CHECK:      verify-plan-parametric.mlir:[[# @LINE - 7]]:3: note: the other buffer is here

// -----

// The `at` offset of %b is not the program at the reserved sizes: above %a
// (512 bytes at N = 8) it sits at 512, not 640 (a plan that tools ignoring
// the program would read differently).
memory.pool @sram align 64 used 1024
func.func @wrong_at(%na: index, %nb: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>}} {
  %a = memory.alloc_storage(%na) max 512 at @sram[0] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %b = memory.alloc_storage(%nb) max 256 at @sram[640] {memory.reserve = "32*N", memory.slot = 1 : i64, memory.above = array<i64: 0>} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  memory.kill %b : !memory.storage<?>
  func.return
}
// CHECK: verify-plan-parametric.mlir:[[# @LINE - 5]]:3: error: verify-plan: storage %b in @wrong_at is at @sram[640] but slot 1 of the pool's offset program is at 512 at the reserved sizes

// -----

// %a's reserve at the upper end of N (64*9 = 576 bytes at N = 9) exceeds its
// max of 512: sizes past the bound would overrun the plan.
memory.pool @sram align 64 used 768
func.func @reserve_over_max(%na: index, %nb: index) attributes {memory.dim_ranges = {N = array<i64: 1, 9>}} {
  %a = memory.alloc_storage(%na) max 512 at @sram[0] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %b = memory.alloc_storage(%nb) max 256 at @sram[512] {memory.reserve = "16*N", memory.slot = 1 : i64, memory.above = array<i64: 0>} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  memory.kill %b : !memory.storage<?>
  func.return
}
// CHECK: verify-plan-parametric.mlir:[[# @LINE - 6]]:3: error: verify-plan: storage %a in @reserve_over_max: memory.reserve "64*N" is 576 bytes at N=9 (the upper ends of the ranges), more than its max of 512 bytes

// -----

// A reserve naming a dim the function does not declare has no value to
// check against its max.
memory.pool @sram align 64 used 512
func.func @undeclared_dim(%na: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>}} {
  %a = memory.alloc_storage(%na) max 512 at @sram[0] {memory.reserve = "64*M", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  func.return
}
// CHECK: verify-plan-parametric.mlir:[[# @LINE - 4]]:3: error: verify-plan: storage %a in @undeclared_dim: memory.reserve "64*M" names dim M, which memory.dim_ranges of @undeclared_dim does not declare

// -----

// Two storages of one pool take slot 0: not a program.
memory.pool @sram align 64 used 768
func.func @duplicate_slot(%na: index, %nb: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>}} {
  %a = memory.alloc_storage(%na) max 512 at @sram[0] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %b = memory.alloc_storage(%nb) max 256 at @sram[512] {memory.reserve = "32*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  memory.kill %b : !memory.storage<?>
  func.return
}
// CHECK: verify-plan-parametric.mlir:[[# @LINE - 5]]:3: error: verify-plan: @duplicate_slot: slot 0 of pool @sram is taken twice in @duplicate_slot

// -----

// An `above` may name only smaller slots (the program is evaluated in slot
// order): slot 0 naming slot 1 is refused.
memory.pool @sram align 64 used 768
func.func @above_larger(%na: index, %nb: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>}} {
  %a = memory.alloc_storage(%na) max 512 at @sram[256] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64: 1>} : !memory.storage<?>
  %b = memory.alloc_storage(%nb) max 256 at @sram[0] {memory.reserve = "32*N", memory.slot = 1 : i64, memory.above = array<i64>} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  memory.kill %b : !memory.storage<?>
  func.return
}
// CHECK: verify-plan-parametric.mlir:[[# @LINE - 6]]:3: error: verify-plan: @above_larger: memory.above of slot 0 names slot 1: it may name only smaller slots

// -----

// %s is pinned in @sram, live with %a, but carries no slot: its static
// offset does not move with the program, so nothing keeps %a (which does)
// clear of it.
memory.pool @sram align 64 used 768
func.func @missing_slot(%na: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>}} {
  %s = memory.alloc_storage at @sram[0] : !memory.storage<256>
  %a = memory.alloc_storage(%na) max 512 at @sram[256] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  memory.kill %s : !memory.storage<256>
  func.return
}
// CHECK:      verify-plan-parametric.mlir:[[# @LINE - 5]]:3: error: verify-plan: 2 problems:
// CHECK:      storage %a in @missing_slot is at @sram[256] but slot 0 of the pool's offset program is at 0 at the reserved sizes
// CHECK-NEXT: storage %s in @missing_slot (no slot of @sram, live [0, 3)) and storage %a in @missing_slot (slot 0 of @sram, live [1, 2)) are live together but are not in one offset program of the pool
