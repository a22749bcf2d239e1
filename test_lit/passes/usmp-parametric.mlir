// RUN: memplan-opt %s -p 'usmp{parametric=true},verify-plan' --split-input-file 2>&1 | filecheck %s
// Without the option the plan is the bound's, with no program:
// RUN: memplan-opt %s --usmp --verify-plan --split-input-file 2>&1 | filecheck %s --check-prefix=STATIC
// Idempotence: planning the parametric plan again changes nothing.
// RUN: memplan-opt %s -p 'usmp{parametric=true}' --split-input-file | memplan-opt -p 'usmp{parametric=true},verify-plan' --split-input-file 2>&1 | filecheck %s
// `plan` forwards the option to usmp.
// RUN: memplan-opt %s --plan=parametric=true --split-input-file 2>&1 | filecheck %s --check-prefix=PLAN

// One pool, N in 1..8. Lifetimes: %a [0, 3), %s [1, 4), %b [2, 5), %c [6, 7):
// %a, %s and %b are live together, %c with nothing. At the bound (%a 512
// bytes, %s 256, %b 256, %c 1024) the plan is %a at 0, %s at 512, %b at 768,
// %c at 0 (used 1024). Slots follow the plan's order (offset, then top):
// %a (0, top 512) slot 0; %c (0, top 1024) slot 1, above nothing (no
// conflict); %s (512) slot 2, above %a; %b (768) slot 3, above %a and %s.
// At N: %a at 0, %c at 0, %s at align(64*N, 64) = 64*N, %b at 64*N + 256;
// the pool takes max(128*N, 96*N + 256): 352 bytes at N = 1, 1024 at N = 8.
// The `at` offsets are the program at the reserved sizes: the bound's plan.
memory.pool @sram align 64
func.func @main(%na: index, %nb: index, %nc: index) attributes {memory.dim_ranges = {N = array<i64: 1, 8>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %a = memory.alloc_storage(%na) max 512 {memory.reserve = "64*N"} : !memory.storage<?>
  %s = memory.alloc_storage : !memory.storage<256>
  %b = memory.alloc_storage(%nb) max 256 {memory.reserve = "32*N"} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  memory.kill %s : !memory.storage<256>
  memory.kill %b : !memory.storage<?>
  %c = memory.alloc_storage(%nc) max 1024 {memory.reserve = "128*N"} : !memory.storage<?>
  memory.kill %c : !memory.storage<?>
  func.return
}
// CHECK-LABEL: memory.pool @sram align 64 used 1024
// CHECK:       func.func @main
// CHECK-NEXT:  %a = memory.alloc_storage(%na) max 512 at @sram[0] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
// CHECK-NEXT:  %s = memory.alloc_storage at @sram[512] {memory.slot = 2 : i64, memory.above = array<i64: 0>} : !memory.storage<256>
// CHECK-NEXT:  %b = memory.alloc_storage(%nb) max 256 at @sram[768] {memory.reserve = "32*N", memory.slot = 3 : i64, memory.above = array<i64: 0, 2>} : !memory.storage<?>
// CHECK:       %c = memory.alloc_storage(%nc) max 1024 at @sram[0] {memory.reserve = "128*N", memory.slot = 1 : i64, memory.above = array<i64>} : !memory.storage<?>
// STATIC-LABEL: memory.pool @sram align 64 used 1024
// STATIC:       func.func @main
// STATIC-NEXT:  %a = memory.alloc_storage(%na) max 512 at @sram[0] {memory.reserve = "64*N"} : !memory.storage<?>
// STATIC-NEXT:  %s = memory.alloc_storage at @sram[512] : !memory.storage<256>
// STATIC-NEXT:  %b = memory.alloc_storage(%nb) max 256 at @sram[768] {memory.reserve = "32*N"} : !memory.storage<?>
// STATIC:       %c = memory.alloc_storage(%nc) max 1024 at @sram[0] {memory.reserve = "128*N"} : !memory.storage<?>
// PLAN-LABEL: memory.pool @sram align 64 used 1024
// PLAN:       %b = memory.alloc_storage(%nb) max 256 at @sram[768] {memory.reserve = "32*N", memory.slot = 3 : i64, memory.above = array<i64: 0, 2>} : !memory.storage<?>

// -----

// The program aligns to the pool's alignment as well as the storage's: in a
// pool aligned to 128, %b (align 64) sits above %a (192 bytes at N = 3) at
// align(64*N, 128): 256 at the reserved sizes, where the static plan put it.
memory.pool @wide align 128
func.func @aligned(%na: index, %nb: index) attributes {memory.dim_ranges = {N = array<i64: 1, 3>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
  %a = memory.alloc_storage(%na) max 192 {memory.reserve = "64*N"} : !memory.storage<?>
  %b = memory.alloc_storage(%nb) max 64 {memory.reserve = "16*N+16"} : !memory.storage<?>
  memory.kill %a : !memory.storage<?>
  memory.kill %b : !memory.storage<?>
  func.return
}
// CHECK-LABEL: memory.pool @wide align 128 used 320
// CHECK:       %a = memory.alloc_storage(%na) max 192 at @wide[0] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
// CHECK-NEXT:  %b = memory.alloc_storage(%nb) max 64 at @wide[256] {memory.reserve = "16*N+16", memory.slot = 1 : i64, memory.above = array<i64: 0>} : !memory.storage<?>
// STATIC-LABEL: memory.pool @wide align 128 used 320

// -----

// A pool that storages of two functions use stays static at the bound (a
// program is per function), with a remark naming it; a pool holding no
// storage with a reserve gets no program either (@static_only).
memory.pool @shared align 64
memory.pool @plain align 64
func.func @first(%n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 4>}} {
  %a = memory.alloc_storage(%n) max 256 pools [@shared] {memory.reserve = "64*N"} : !memory.storage<?>
  %b = memory.alloc_storage pools [@shared] : !memory.storage<64>
  memory.kill %a : !memory.storage<?>
  memory.kill %b : !memory.storage<64>
  func.return
}
func.func @second() {
  %c = memory.alloc_storage pools [@shared] : !memory.storage<128>
  memory.kill %c : !memory.storage<128>
  func.return
}
func.func @static_only(%n: index) {
  %d = memory.alloc_storage(%n) max 128 pools [@plain] : !memory.storage<?>
  %e = memory.alloc_storage pools [@plain] : !memory.storage<64>
  memory.kill %d : !memory.storage<?>
  memory.kill %e : !memory.storage<64>
  func.return
}
// CHECK:       remark: usmp: pool @shared is used by the storages of @first, @second: its offsets stay static at the bound (a parametric program is per function and per pool)
// CHECK-LABEL: memory.pool @shared align 64 used 320
// CHECK-NOT:   memory.slot
// CHECK:       func.return
// STATIC-NOT:  remark
// STATIC-LABEL: memory.pool @shared align 64 used 320

// -----

// A storage pinned before the pass keeps its offset: its pool stays static,
// with a remark, and the new storage is planned around it.
memory.pool @pinned align 64
func.func @prepinned(%n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 4>}} {
  %a = memory.alloc_storage(%n) max 256 {memory.reserve = "64*N"} : !memory.storage<?>
  %b = memory.alloc_storage at @pinned[0] : !memory.storage<64>
  memory.kill %a : !memory.storage<?>
  memory.kill %b : !memory.storage<64>
  func.return
}
// CHECK:       remark: usmp: pool @pinned holds storages of @prepinned pinned before the pass: its offsets stay static at the bound
// CHECK-LABEL: memory.pool @pinned align 64 used 320
// CHECK:       %a = memory.alloc_storage(%n) max 256 at @pinned[64] {memory.reserve = "64*N"} : !memory.storage<?>
// STATIC-LABEL: memory.pool @pinned align 64 used 320
