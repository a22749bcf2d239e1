// `plan` is the whole pipeline as one pass: the same output as the five
// passes it stands for, with its options passed on to coalesce and usmp.
// RUN: memplan-opt %s --plan > %t.plan.mlir
// RUN: memplan-opt %s --manifest-alloc --insert-kills --coalesce --usmp --verify-plan > %t.steps.mlir
// RUN: diff %t.plan.mlir %t.steps.mlir
// RUN: memplan-opt %s --plan='algorithm=exact coalesce=false' > %t.exact.mlir
// RUN: memplan-opt %s --manifest-alloc --insert-kills --usmp=algorithm=exact --verify-plan > %t.exact-steps.mlir
// RUN: diff %t.exact.mlir %t.exact-steps.mlir
// The searches stop on a node budget, passed on as well; an explicit
// wall-clock `timeout` is still accepted (an opt-in), and where the searches
// end before it the plan is the budget's.
// RUN: memplan-opt %s --plan='budget=500 timeout=60' > %t.budget.mlir
// RUN: memplan-opt %s --manifest-alloc --insert-kills --coalesce='budget=500 timeout=60' --usmp='budget=500 timeout=60' > %t.budget-steps.mlir
// RUN: diff %t.budget.mlir %t.budget-steps.mlir
// RUN: diff %t.plan.mlir %t.budget.mlir
// RUN: filecheck %s --input-file %t.plan.mlir
//
// The planning passes on value-semantic input have nothing to plan: each
// says so in a warning at the function, instead of printing the input
// unchanged without a word; verify-plan has no plan to check, and under
// require-pinned that is an error (exit 1).
// RUN: memplan-opt %s --coalesce --usmp 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: memplan-opt %s --insert-kills --verify-plan 2>&1 >/dev/null | filecheck %s --check-prefix=KILLS
// RUN: not memplan-opt %s --verify-plan=require-pinned=true 2>&1 >/dev/null | filecheck %s --check-prefix=PINNED

func.func private @dense(tensor<1x64xf32>) -> tensor<1x64xf32>

// Four 256-byte activations, each live only with the next (the last is
// returned): two slots, 512 bytes.
// CHECK:       memory.pool @workspace_cpu targets ["cpu"] used 512
// CHECK-LABEL: func.func @main
// REMARK:      plan.mlir:[[# @LINE + 6]]:1: warning: coalesce: @main calls kernels on tensors but allocates no storage: run manifest-alloc and insert-kills first (or --plan)
// REMARK:      plan.mlir:[[# @LINE + 5]]:1: warning: usmp: @main calls kernels
// KILLS:       plan.mlir:[[# @LINE + 4]]:1: warning: insert-kills: @main calls kernels on tensors but allocates no storage: run manifest-alloc first (or --plan)
// KILLS:       plan.mlir:[[# @LINE + 3]]:1: warning: verify-plan: @main calls kernels on tensors but allocates no storage: run manifest-alloc, insert-kills and usmp first (or --plan)
// PINNED:      plan.mlir:[[# @LINE + 2]]:1: error: verify-plan: @main calls kernels on tensors but allocates no storage: run manifest-alloc, insert-kills and usmp first (or --plan)
// PINNED-NOT:  warning
func.func @main(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %a = func.call @dense(%x) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %b = func.call @dense(%a) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %c = func.call @dense(%b) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %d = func.call @dense(%c) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  func.return %d : tensor<1x64xf32>
}
