// plan-report on a parametric plan (test_lit/Inputs/parametric-batch.mlir:
// dynamic_batch.onnx with N in 1..64, the pool 80*N bytes).
// RUN: memplan-opt %repo/test_lit/Inputs/parametric-batch.mlir --plan-report -o /dev/null 2>&1 | filecheck %s --check-prefix=TEXT
// RUN: memplan-opt %repo/test_lit/Inputs/parametric-batch.mlir --plan-report=format=json -o /dev/null 2>&1 | filecheck %s --check-prefix=JSON
// RUN: memplan-opt %repo/test_lit/Inputs/parametric-batch.mlir --plan-report='format=c-header output="%t.h"' -o /dev/null
// RUN: filecheck %s --check-prefix=HEADER < %t.h
// RUN: %if gcc %{ gcc -std=c99 -Wall -Wextra -Werror -pedantic -fsyntax-only -x c %t.h %}
// The chunks below (the last one is refused, so memplan-opt exits 1):
// RUN: not memplan-opt %s --split-input-file --plan-report -o /dev/null 2>&1 | filecheck %s --check-prefix=DIMS
// RUN: not memplan-opt %s --split-input-file --plan-report=format=c-header -o /dev/null 2>&1 | filecheck %s --check-prefix=DIMS-HEADER
// RUN: not memplan-opt %s --split-input-file --plan-report -o /dev/null 2>&1 | filecheck %s --check-prefix=BAD

// The text report: the table as for a static plan (the plan at N = 64), then
// the dims, and the pool as an expression of N (align(64*N, 64) + 16*N, its
// terms in the expression's canonical order), 80 bytes at N = 1 and 5120 at
// N = 64; per slot the slots it sits above, its size and its offset.
// TEXT-LABEL: function @main: 3 storages, 40 ops
// TEXT-NEXT:    pool            size  no planning  used  lower bound  used/lb  buffers  largest
// TEXT-NEXT:    @workspace_cpu     -         6144  5120         5120    1.00x        3  h1_storage (4096), h6_storage (1024), y_storage (1024)
// TEXT-NEXT:    dims: N in [1, 64] (argument 0, axis 0)
// TEXT-NEXT:    parametric pool @workspace_cpu: 16*N + align(64*N, 64) bytes (3 storages)
// TEXT-NEXT:      at the lower ends (N=1): 80 bytes; at the upper ends (N=64): 5120 bytes
// TEXT-NEXT:      slot  storage     above  size  offset
// TEXT-NEXT:      0     h1_storage  -      64*N  0
// TEXT-NEXT:      1     y_storage   -      16*N  0
// TEXT-NEXT:      2     h6_storage  0, 1   16*N  align(64*N, 64)
// TEXT-NEXT:    dynamic-size storages planned at their bound:

// The JSON report: the pool's "parametric" record, and per storage its slot, the slots
// it sits above, its offset expression and its reserve. The static fields
// (offset, size) stay the plan at the upper bound.
// JSON-LABEL: "name": "main",
// JSON:       {"name": "workspace_cpu", "size": null, "used": 5120, {{.*}} "parametric": {"size": "16*N + align(64*N, 64)", "at_lower": 80, "at_upper": 5120, "dims": {"N": [1, 64]}}}
// JSON:       {"name": "h1_storage", "size": 4096, {{.*}} "offset": 0, {{.*}} "slot": 0, "above": [], "offset_expr": "0", "reserve": "64*N"}
// JSON-NEXT:  {"name": "h6_storage", "size": 1024, {{.*}} "offset": 4096, {{.*}} "slot": 2, "above": [0, 1], "offset_expr": "align(64*N, 64)", "reserve": "16*N"}
// JSON-NEXT:  {"name": "y_storage", "size": 1024, {{.*}} "offset": 0, {{.*}} "slot": 1, "above": [], "offset_expr": "0", "reserve": "16*N"}

// The C header: the static defines (the plan at N = 64) stay; then the
// helpers, the check function, the slot indices and the offsets and size
// functions, which compute the program (each size an `above` names once,
// each offset from the earlier ones) in size_t. The header refuses to
// compile where size_t cannot hold 5120, the largest value they compute.
// HEADER-LABEL: #ifndef MEMPLAN_MEMPLAN_H
// HEADER:       #include <stddef.h>
// HEADER-NEXT:  #include <stdint.h>
// HEADER:       #define MEMPLAN_WORKSPACE_CPU_SIZE 5120
// HEADER:       /* storage %h1_storage (activation) in @workspace_cpu: 4096 bytes, align 64, live [7, 27), slot 0 */
// HEADER-NEXT:  #define MEMPLAN_MAIN_H1_STORAGE_OFFSET 0
// HEADER:       #define MEMPLAN_MAIN_H6_STORAGE_OFFSET 4096
// HEADER:       } memplan_pools;
// HEADER-EMPTY:
// HEADER-NEXT:  /* Plans as functions of the dynamic dims (usmp parametric=true). The _OFFSET
// HEADER:       static inline size_t memplan_max(size_t a, size_t b) { return a > b ? a : b; }
// HEADER-NEXT:  static inline size_t memplan_ceildiv(size_t a, size_t d) { return a / d + (a % d != 0); }
// HEADER-NEXT:  static inline size_t memplan_align(size_t a, size_t m) { return memplan_ceildiv(a, m) * m; }
// HEADER-EMPTY:
// HEADER-NEXT:  /* @main's dims: N in [1, 64] (argument 0, axis 0).
// HEADER:       static inline int memplan_main_dims_ok(size_t N) {
// HEADER-NEXT:      return N >= 1 && N <= 64;
// HEADER-NEXT:  }
// HEADER-EMPTY:
// HEADER-NEXT:  /* @main's pool @workspace_cpu: 3 storages in its offset program,
// HEADER-NEXT:   * 16*N + align(64*N, 64) bytes (80 at the lower ends, 5120 at the upper ends). */
// HEADER-NEXT:  #if SIZE_MAX < 5120u
// HEADER-NEXT:  #error "size_t cannot hold 5120, which memplan_main_workspace_cpu_size reaches at the upper ends of the dims"
// HEADER-NEXT:  #endif
// HEADER-NEXT:  #define MEMPLAN_MAIN_WORKSPACE_CPU_SLOTS 3
// HEADER-NEXT:  #define MEMPLAN_MAIN_H1_STORAGE_SLOT 0 /* %h1_storage */
// HEADER-NEXT:  #define MEMPLAN_MAIN_Y_STORAGE_SLOT 1 /* %y_storage */
// HEADER-NEXT:  #define MEMPLAN_MAIN_H6_STORAGE_SLOT 2 /* %h6_storage */
// HEADER-NEXT:  /* Each storage's byte offset from the pool's base at the dims, by slot. */
// HEADER-NEXT:  static inline void memplan_main_workspace_cpu_offsets(size_t N, size_t offsets[MEMPLAN_MAIN_WORKSPACE_CPU_SLOTS]) {
// HEADER-NEXT:      const size_t size0 = 64 * N; /* %h1_storage */
// HEADER-NEXT:      const size_t size1 = 16 * N; /* %y_storage */
// HEADER-NEXT:      offsets[0] = 0; /* %h1_storage */
// HEADER-NEXT:      offsets[1] = 0; /* %y_storage */
// HEADER-NEXT:      offsets[2] = memplan_align(memplan_max(offsets[0] + size0, offsets[1] + size1), 64); /* %h6_storage */
// HEADER-NEXT:  }
// HEADER-NEXT:  /* The pool's bytes at the dims. */
// HEADER-NEXT:  static inline size_t memplan_main_workspace_cpu_size(size_t N) {
// HEADER-NEXT:      size_t offsets[MEMPLAN_MAIN_WORKSPACE_CPU_SLOTS];
// HEADER-NEXT:      size_t top = 0;
// HEADER-NEXT:      memplan_main_workspace_cpu_offsets(N, offsets);
// HEADER-NEXT:      top = memplan_max(top, offsets[0] + 64 * N); /* %h1_storage */
// HEADER-NEXT:      top = memplan_max(top, offsets[1] + 16 * N); /* %y_storage */
// HEADER-NEXT:      top = memplan_max(top, offsets[2] + 16 * N); /* %h6_storage */
// HEADER-NEXT:      return top;
// HEADER-NEXT:  }
// HEADER-EMPTY:
// HEADER-NEXT:  #endif /* MEMPLAN_MEMPLAN_H */

// A function with ranged dims and no offset program (its storage is static):
// the text report names the dims; the header has the check function (a
// lower end of 0 is not tested: a size_t is never below it), and a dim whose
// name C cannot take is renamed (`seq.len` is `seq_len`, `int` is
// `dim_int`).
memory.pool @sram
func.func @ranged(%x: memref<?x?xf32>) attributes {memory.dim_ranges = {"seq.len" = array<i64: 0, 128>, int = array<i64: 2, 9>}, memory.dim_symbols = {"seq.len" = array<i64: 0, 1>}} {
  %s = memory.alloc_storage at @sram[0] : !memory.storage<64>
  func.return
}
// DIMS-LABEL: function @ranged: 1 storage, 2 ops
// DIMS:         dims: seq.len in [0, 128] (argument 0, axis 1), int in [2, 9]
// DIMS-NOT:     parametric pool
// DIMS-HEADER-LABEL: /* @ranged's dims: seq_len (dim seq.len) in [0, 128] (argument 0, axis 1), dim_int (dim int) in [2, 9].
// DIMS-HEADER:       static inline int memplan_ranged_dims_ok(size_t seq_len, size_t dim_int) {
// DIMS-HEADER-NEXT:      return seq_len <= 128 && dim_int >= 2 && dim_int <= 9;
// DIMS-HEADER-NEXT:  }
// DIMS-HEADER-NOT:   _offsets

// -----

// An offset program with a slot missing is refused at the storage that
// shows it, naming the pool and the function.
memory.pool @sram
func.func @gap(%n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 4>}} {
  %a = memory.alloc_storage(%n) max 64 at @sram[0] {memory.reserve = "16*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  %b = memory.alloc_storage(%n) max 64 at @sram[64] {memory.reserve = "16*N", memory.slot = 2 : i64, memory.above = array<i64: 0>} : !memory.storage<?>
  func.return
}
// BAD: plan-report-parametric.mlir:[[# @LINE - 3]]:3: error: plan-report: the slots of pool @sram in @gap are not 0..1: slot 1 is missing

// -----

// The C header computes in size_t: a program with a value past 64 bits at
// the upper ends (here N*N, 2^80, inside the size 2^50) is refused, naming
// what reaches it. The text report has no such limit.
memory.pool @sram
func.func @square(%n: index) attributes {memory.dim_ranges = {N = array<i64: 1, 1099511627776>}} {
  %a = memory.alloc_storage(%n) max 1125899906842624 at @sram[0] {memory.reserve = "floordiv(N*N, 1073741824)", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
  func.return
}
// DIMS-LABEL: function @square: 1 storage, 2 ops
// DIMS:         parametric pool @sram: floordiv(N*N, 1073741824) bytes (1 storage)
// DIMS-NEXT:      at the lower ends (N=1): 0 bytes; at the upper ends (N=1099511627776): 1125899906842624 bytes
// DIMS-HEADER:  error: plan-report: computing the size of %a (floordiv(N*N, 1073741824)) in @square reaches 1208925819614629174706176 at the upper ends of the dims, more than a 64-bit size_t holds: the C header cannot compute pool @sram
