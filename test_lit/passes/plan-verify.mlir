// RUN: not memplan-opt %s --plan 2>&1 | filecheck %s --check-prefix=VERIFY
// RUN: memplan-opt %s --plan=verify=false | filecheck %s --check-prefix=SKIP

// `plan` ends with verify-plan: an unsound plan fails the run rather than
// leave memplan-opt. Input already in memory form passes through
// manifest-alloc unchanged and keeps its pinned storages, so this plan (issue
// 26's first case as the old manifest-alloc made it: the loop's second
// iteration writes over %a while %r, which may be %a, is read after the loop)
// reaches verify-plan as written. `verify=false` skips the check: the plan is
// printed, exit 0.
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

// VERIFY: plan-verify.mlir:[[# @LINE - 9]]:5: error: verify-plan: memory.invoke @k0 (op 12) in @loop_buffer_clobber writes %it_spare over the bytes of %r
// VERIFY-NOT: builtin.module

// SKIP-LABEL: func.func @loop_buffer_clobber(
// SKIP:         memory.invoke @use ins(%r, %l : memref<4xf32>, memref<4xf32>)
