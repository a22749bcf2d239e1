// RUN: memplan-opt %s --plan --verify-plan | filecheck %s
// RUN: memplan-opt %s --plan --plan-report=format=json 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT

// Two dense layers and an activation: three 4 KiB results, of which at most
// two are live at once, so the plan needs 8 KiB and every result is pinned
// in the one pool `usmp` creates.
func.func private @dense(tensor<1x1024xf32>) -> tensor<1x1024xf32>
func.func private @relu(tensor<1x1024xf32>) -> tensor<1x1024xf32>

func.func @main(%x: tensor<1x1024xf32>) -> tensor<1x1024xf32> {
  %h = func.call @dense(%x) : (tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %a = func.call @relu(%h) : (tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %y = func.call @dense(%a) : (tensor<1x1024xf32>) -> tensor<1x1024xf32>
  func.return %y : tensor<1x1024xf32>
}

// CHECK:       memory.pool @workspace_cpu targets ["cpu"] used 8192
// CHECK-LABEL: func.func @main
// CHECK-COUNT-3: memory.alloc_storage at @workspace_cpu[{{[0-9]+}}]
// CHECK-NOT:   memory.alloc_storage :

// REPORT:      "lower_bound": 8192
