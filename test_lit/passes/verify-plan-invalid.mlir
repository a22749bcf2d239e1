// RUN: not memplan-opt %s --verify-plan --split-input-file 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not memplan-opt %s --verify-plan --split-input-file --disable-verify 2>&1 | filecheck %s --check-prefix=NOVERIFY
// RUN: not memplan-opt %s --verify-plan='require-pinned=true' --split-input-file 2>&1 | filecheck %s --check-prefix=PINNED

// Two storages live together at overlapping bytes of @sram: %a ([0, 5):
// used by the invoke at 4) holds [0, 64) and %b ([2, 5)) holds [32, 96).
// The message names both values, both byte ranges and both lifetimes.
memory.pool @sram size 256
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @overlap(%x: memref<16xf32>) {
  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %b = memory.alloc_storage align 32 at @sram[32] : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  func.return
}
// The diagnostic points at the first storage, with a note at the other.
// ERR: verify-plan-invalid.mlir:[[# @LINE - 8]]:3: error: verify-plan: storage %a in @overlap (bytes [0, 64) of @sram, live [0, 5)) and storage %b in @overlap (bytes [32, 96) of @sram, live [2, 5)) are live together but share bytes
// ERR: verify-plan-invalid.mlir:[[# @LINE - 7]]:3: note: the other buffer is here

// -----

// Two tensors of one storage overlap ([0, 64) and [32, 96)) while both are
// live: %t1 [1, 4) and %t2 [2, 4) (both used by the invoke at 3).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @tensor_overlap() {
  %s = memory.alloc_storage : !memory.storage<128>
  %t1 = memory.alloc_tensor %s[0] : !memory.storage<128> -> memref<16xf32>
  %t2 = memory.alloc_tensor %s[32] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%t1 : memref<16xf32>) outs(%t2 : memref<16xf32>)
  func.return
}
// ERR: verify-plan: tensor %t1 (bytes [0, 64) of storage %s in @tensor_overlap, live [1, 4)) and tensor %t2 (bytes [32, 96) of storage %s in @tensor_overlap, live [2, 4)) are live together but share bytes

// -----

// A called function runs while its caller's storages are live: @helper's %h
// conflicts with @main's %m, which is live across the call.
memory.pool @sram size 64
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @helper() {
  %h = memory.alloc_storage at @sram[0] : !memory.storage<64>
  func.return
}
func.func @main(%x: memref<16xf32>) {
  %m = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %tm = memory.alloc_tensor %m[0] : !memory.storage<64> -> memref<16xf32>
  func.call @helper() : () -> ()
  memory.invoke @k ins(%tm : memref<16xf32>) outs(%x : memref<16xf32>)
  func.return
}
// ERR: verify-plan: storage %h in @helper (bytes [0, 64) of @sram, live [0, 1)) and storage %m in @main (bytes [0, 64) of @sram, live [0, 4)) are live together but share bytes

// -----

// A pinned pool must be one of the storage's candidates.
memory.pool @sram size 256
memory.pool @dram
func.func @not_a_candidate() {
  %s = memory.alloc_storage pools [@dram] at @sram[0] : !memory.storage<64>
  func.return
}
// ERR: verify-plan: storage %s in @not_a_candidate may not be placed in @sram: not among its candidates [@dram]

// -----

// A storage written through memref.store may not sit in a read-only pool.
memory.pool @flash access ro
func.func @written_in_ro(%v: f32, %i: index) {
  %s = memory.alloc_storage at @flash[0] : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memref.store %v, %t[%i] : memref<16xf32>
  func.return
}
// ERR: verify-plan: storage %s in @written_in_ro may not be placed in @flash: the pool is read-only and the buffer is written

// -----

// Several problems are reported together.
memory.pool @sram size 256
func.func @two_problems() {
  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %b = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %c = memory.alloc_storage at @sram[0] : !memory.storage<64>
  memory.kill %c : !memory.storage<64>
  memory.kill %b : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  func.return
}
// ERR:      verify-plan-invalid.mlir:[[# @LINE - 8]]:3: error: verify-plan: 3 problems:
// ERR-NEXT:   %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
// ERR-NEXT:   ^
// ERR-NEXT:   storage %a in @two_problems (bytes [0, 64) of @sram, live [0, 5)) and storage %b in @two_problems (bytes [0, 64) of @sram, live [1, 4)) are live together but share bytes
// ERR-NEXT:   storage %a in @two_problems (bytes [0, 64) of @sram, live [0, 5)) and storage %c in @two_problems (bytes [0, 64) of @sram, live [2, 3)) are live together but share bytes
// ERR-NEXT:   storage %b in @two_problems (bytes [0, 64) of @sram, live [1, 4)) and storage %c in @two_problems (bytes [0, 64) of @sram, live [2, 3)) are live together but share bytes

// -----

// Alignment and bounds: the dialect's verifier rejects these on parsing
// already; with --disable-verify the IR reaches verify-plan, which finds
// both on its own (offset 16 is not a multiple of the storage's alignment
// 64; [128, 192) runs past the 128-byte pool).
memory.pool @sram size 128
func.func @misplaced() {
  %a = memory.alloc_storage at @sram[16] : !memory.storage<64>
  %b = memory.alloc_storage at @sram[128] : !memory.storage<64>
  func.return
}
// ERR: error: storage %a: offset 16 in @sram is not a multiple of its alignment 64
// NOVERIFY:      verify-plan: 2 problems:
// NOVERIFY-NEXT:   %a = memory.alloc_storage at @sram[16] : !memory.storage<64>
// NOVERIFY-NEXT:   ^
// NOVERIFY-NEXT:   storage %a in @misplaced at offset 16 in @sram is not a multiple of its alignment 64
// NOVERIFY-NEXT:   storage %b in @misplaced at bytes [128, 192) runs past the end of @sram (size 128)

// -----

// With require-pinned, a static storage left unpinned is an error (without
// the option this case passes: unpinned storages are not checked).
func.func @unpinned() {
  %u = memory.alloc_storage : !memory.storage<48>
  func.return
}
// PINNED: verify-plan: storage %u in @unpinned (48 bytes) is not pinned to a pool

// -----

// `memory.inplace_of` alone does not make an overlap legal: @k declares no
// `memory.inplace` pair, so %b sharing %a's bytes while %a is read at the
// same invoke is an overlap (with the pair declared, verify-plan accepts it:
// passes/manifest-alloc-inplace.mlir).
func.func private @k(memref<16xf32>, memref<16xf32>) -> ()
func.func @undeclared_in_place(%x: memref<16xf32>) {
  %s = memory.alloc_storage : !memory.storage<64>
  %a = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
  %b = memory.alloc_tensor %s[0] {memory.inplace_of = 0 : i64} : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%a : memref<16xf32>) outs(%b : memref<16xf32>)
  memory.kill %s : !memory.storage<64>
  func.return
}
// ERR: error: verify-plan: tensor %a (bytes [0, 64) of storage %s in @undeclared_in_place, live [1, 5)) and tensor %b (bytes [0, 64) of storage %s in @undeclared_in_place, live [3, 5)) are live together but share bytes
// NOVERIFY: tensor %a
// PINNED: tensor %a

// -----

// A use after a kill: memplan-opt's verification reports it before any pass
// runs; with --disable-verify, verify-plan's own kill-order check does, at
// the use, with a note at the kill.
func.func private @read(memref<16xf32>)
func.func @use_after_kill() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memory.kill %t : memref<16xf32>
  memory.invoke @read ins(%t : memref<16xf32>)
  func.return
}
// ERR: verify-plan-invalid.mlir:[[# @LINE - 3]]:3: error: %t is used by memory.invoke after its kill
// NOVERIFY: verify-plan-invalid.mlir:[[# @LINE - 4]]:3: error: verify-plan: %t is used by memory.invoke after its kill
// NOVERIFY: verify-plan-invalid.mlir:[[# @LINE - 6]]:3: note: %t is killed here
// PINNED: %t is used by memory.invoke after its kill

// -----

// Issue 26, case 1, as the old manifest-alloc planned it: %a's storage is the
// loop's first buffer while %r (an scf.if result that is %a when %c holds)
// is read after the loop. No two storages overlap, so only the clobber check
// sees it: the second iteration writes %it_spare, which is then %a's bytes.
memory.pool @workspace_cpu targets ["cpu"]
func.func private @k0(memref<4xf32>, memref<4xf32>) -> ()
func.func private @use(memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
func.func @loop_buffer_clobber(%x: memref<4xf32>, %c: i1) -> memref<4xf32> {
  %lb = arith.constant 0 : index
  %ub = arith.constant 2 : index
  %st = arith.constant 1 : index
  %a_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<16>
  %a = memory.alloc_tensor %a_storage[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @k0 ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  %r = scf.if %c -> (memref<4xf32>) {
    scf.yield %a : memref<4xf32>
  } else {
    scf.yield %x : memref<4xf32>
  }
  %l_spare_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<16>
  %l_spare = memory.alloc_tensor %l_spare_storage[0] : !memory.storage<16> -> memref<4xf32>
  %l, %0 = scf.for %i = %lb to %ub step %st iter_args(%it = %a, %it_spare = %l_spare) -> (memref<4xf32>, memref<4xf32>) {
    memory.invoke @k0 ins(%it : memref<4xf32>) outs(%it_spare : memref<4xf32>)
    scf.yield %it_spare, %it : memref<4xf32>, memref<4xf32>
  }
  %u_storage = memory.alloc_storage at @workspace_cpu[128] : !memory.storage<16>
  %u = memory.alloc_tensor %u_storage[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @use ins(%r, %l : memref<4xf32>, memref<4xf32>) outs(%u : memref<4xf32>)
  func.return %u : memref<4xf32>
}
// ERR: verify-plan-invalid.mlir:[[# @LINE - 8]]:5: error: verify-plan: memory.invoke @k0 (op 12) in @loop_buffer_clobber writes %it_spare over the bytes of %r (bytes [0, 16) of @workspace_cpu), which memory.invoke @use (op 16) reads later: a value still needed is overwritten
// ERR: verify-plan-invalid.mlir:[[# @LINE - 4]]:3: note: %r is read here

// -----

// Issue 26, case 3, in a loop: @mix reads %acc at operands 0 and 1 and writes
// it, but declares only operand 1 shareable with its result.

memory.pool @workspace_cpu targets ["cpu"]
func.func private @k0(memref<4xf32>, memref<4xf32>) -> ()
func.func private @mix(memref<4xf32>, memref<4xf32>, memref<4xf32>) -> () attributes {memory.inplace = array<i64: 0, 1>}
func.func @loop_inplace_twice(%x: memref<4xf32>, %n: index) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<16>
  %a = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @k0 ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> (memref<4xf32>) {
    memory.invoke @mix ins(%acc, %acc : memref<4xf32>, memref<4xf32>) outs(%acc : memref<4xf32>)
    scf.yield %acc : memref<4xf32>
  }
  func.return %r : memref<4xf32>
}
// ERR: verify-plan-invalid.mlir:[[# @LINE - 5]]:5: error: verify-plan: memory.invoke @mix (op 6) in @loop_inplace_twice writes %acc over %acc (bytes [0, 16) of @workspace_cpu), which it reads as operand #0: memory.inplace of @mix does not declare operand #0 shareable with result #0 at the same offset

// -----

// Issue 26, case 3, as the old manifest-alloc planned it: %b is carved over
// %a for the pair (0, 1), but %a is also operand 0, which @mix does not
// declare shareable: not an in-place pair, so an overlap of live tensors.

memory.pool @workspace_cpu targets ["cpu"]
func.func private @k0(memref<4xf32>, memref<4xf32>) -> ()
func.func private @mix(memref<4xf32>, memref<4xf32>, memref<4xf32>) -> () attributes {memory.inplace = array<i64: 0, 1>}
func.func @inplace_twice(%x: memref<4xf32>) -> memref<4xf32> {
  %s = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<16>
  %a = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @k0 ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  %b = memory.alloc_tensor %s[0] {memory.inplace_of = 1 : i64} : !memory.storage<16> -> memref<4xf32>
  memory.invoke @mix ins(%a, %a : memref<4xf32>, memref<4xf32>) outs(%b : memref<4xf32>)
  %d_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<16>
  %d = memory.alloc_tensor %d_storage[0] : !memory.storage<16> -> memref<4xf32>
  memory.invoke @k0 ins(%b : memref<4xf32>) outs(%d : memref<4xf32>)
  func.return %d : memref<4xf32>
}
// ERR: verify-plan: tensor %a (bytes [0, 16) of storage %s in @inplace_twice, live [1, 5)) and tensor %b (bytes [0, 16) of storage %s in @inplace_twice, live [3, 8)) are live together but share bytes

// -----

// The manifest form reads as value semantics: a write ends the content of
// every other value on its bytes. Writing through %r, which is %a when %c
// holds, and then reading %a is reported in this unplanned program too
// (no pool, no plan): a program made from value semantics never does it,
// and a plan that makes a loop buffer or an in-place result of %a's bytes
// looks exactly like this (issue 26, case 1).

func.func private @k()
func.func @write_through_alias(%c: i1, %x: memref<16xi8>) {
  %s = memory.alloc_storage : !memory.storage<16>
  %a = memory.alloc_tensor %s[0] : !memory.storage<16> -> memref<16xi8>
  memory.invoke @k ins(%x : memref<16xi8>) outs(%a : memref<16xi8>)
  %r = scf.if %c -> (memref<16xi8>) {
    scf.yield %a : memref<16xi8>
  } else {
    scf.yield %x : memref<16xi8>
  }
  memory.invoke @k outs(%r : memref<16xi8>)
  memory.invoke @k ins(%a : memref<16xi8>) outs(%x : memref<16xi8>)
  func.return
}
// ERR: verify-plan-invalid.mlir:[[# @LINE - 4]]:3: error: verify-plan: memory.invoke @k (op 6) in @write_through_alias writes %r over the bytes of %a (bytes [0, 16) of its storage), which memory.invoke @k (op 7) reads later: a value still needed is overwritten
// ERR: verify-plan-invalid.mlir:[[# @LINE - 4]]:3: note: %a is read here
