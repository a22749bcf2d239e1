// Zero-element tensors (ONNX models make them: an empty Split piece, a
// Shape slice past its end) plan as 0-byte storages that take no pool
// bytes: here %e and %f hold tensor<0x4xf32>, pinned at offset 0 while
// %a is live there, and the pool is the two 64-byte tensors live
// together, the lower bound. verify-plan accepts the overlap (no bytes).
// RUN: memplan-opt %s --plan --verify-plan --plan-report=format=text 2>%t.report | filecheck %s
// RUN: filecheck %s --check-prefix=REPORT < %t.report

// CHECK:       memory.pool @workspace_cpu targets ["cpu"] used 128
// CHECK-LABEL: func.func @main
// CHECK:         %a_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>
// CHECK:         %e_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<0>
// CHECK-NEXT:    %e = memory.alloc_tensor %e_storage[0] : !memory.storage<0> -> memref<0x4xf32>
// CHECK-NEXT:    memory.invoke @take ins(%a : memref<16xf32>) outs(%e : memref<0x4xf32>)
// CHECK:         %f_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<0>
// CHECK:         %b_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>
// CHECK:         memory.kill %e_storage : !memory.storage<0>
// REPORT:      @workspace_cpu     -          192   128          128    1.00x        5

func.func private @relu(tensor<16xf32>) -> tensor<16xf32>
func.func private @take(tensor<16xf32>) -> tensor<0x4xf32>
func.func private @mix(tensor<16xf32>, tensor<0x4xf32>) -> tensor<16xf32>

func.func @main(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<0x4xf32>) {
  %a = func.call @relu(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %e = func.call @take(%a) : (tensor<16xf32>) -> tensor<0x4xf32>
  %f = func.call @take(%a) : (tensor<16xf32>) -> tensor<0x4xf32>
  %b = func.call @mix(%a, %e) : (tensor<16xf32>, tensor<0x4xf32>) -> tensor<16xf32>
  %c = func.call @mix(%b, %f) : (tensor<16xf32>, tensor<0x4xf32>) -> tensor<16xf32>
  func.return %c, %f : tensor<16xf32>, tensor<0x4xf32>
}
