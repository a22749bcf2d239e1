// RUN: memplan-opt %s --manifest-alloc --split-input-file | filecheck %s
// RUN: memplan-opt %s --manifest-alloc=inplace=false --split-input-file | filecheck %s --check-prefix=FIXED
// RUN: memplan-opt %s --plan --verify-plan --split-input-file > /dev/null
// RUN: memplan-opt %s --manifest-alloc --insert-kills --usmp --plan-report=format=json --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=JSON

// Shared: @relu declares (result 0, operand 0) in place and %a dies at the
// call (its last reader), so %b is carved at offset 0 of %a's storage, marked
// `memory.inplace_of = 0`, and needs no storage of its own. The chain goes on:
// %c takes the same bytes as %b dies. With inplace=false each result gets its
// own storage. verify-plan (third RUN line) accepts the declared overlap.
func.func private @k(tensor<16xf32>) -> tensor<16xf32>
func.func private @relu(tensor<16xf32>) -> tensor<16xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func @shared(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = func.call @k(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %b = func.call @relu(%a) : (tensor<16xf32>) -> tensor<16xf32>
  %c = func.call @relu(%b) : (tensor<16xf32>) -> tensor<16xf32>
  %d = func.call @k(%c) : (tensor<16xf32>) -> tensor<16xf32>
  func.return %d : tensor<16xf32>
}

// CHECK-LABEL: func.func @shared(
// CHECK-NEXT:    %a_storage = memory.alloc_storage : !memory.storage<64>
// CHECK-NEXT:    %a = memory.alloc_tensor %a_storage[0] : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    memory.invoke @k ins(%x : memref<16xf32>) outs(%a : memref<16xf32>)
// CHECK-NEXT:    %b = memory.alloc_tensor %a_storage[0] {memory.inplace_of = 0 : i64} : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    memory.invoke @relu ins(%a : memref<16xf32>) outs(%b : memref<16xf32>)
// CHECK-NEXT:    %c = memory.alloc_tensor %a_storage[0] {memory.inplace_of = 0 : i64} : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    memory.invoke @relu ins(%b : memref<16xf32>) outs(%c : memref<16xf32>)
// CHECK-NEXT:    %d_storage = memory.alloc_storage

// The JSON report names the tensor each one took the bytes of, so an
// outside checker can tell the shared pair from a clobbering plan.
// JSON:        {"name": "a", "storage": "a_storage", "offset": 0, "size": 64, "start": 1, "end": 5},
// JSON-NEXT:   {"name": "b", "storage": "a_storage", "offset": 0, "size": 64, {{.*}}"inplace_of": "a"}
// JSON-NEXT:   {"name": "c", "storage": "a_storage", "offset": 0, "size": 64, {{.*}}"inplace_of": "b"}

// FIXED-LABEL: func.func @shared(
// FIXED:         %b_storage = memory.alloc_storage : !memory.storage<64>
// FIXED:         %c_storage = memory.alloc_storage : !memory.storage<64>

// -----

// Refused, each for its own reason: %x is the function's argument (the
// caller's memory); %a is read again by the last @k (used later); %e is
// returned (it escapes, so its bytes must survive the call); %v is a view of
// %f and %f is read after the @relu of %v (an alias used later).
func.func private @k(tensor<16xf32>) -> tensor<16xf32>
func.func private @flat(tensor<16xf32>) -> tensor<4x4xf32> attributes {memory.view}
func.func private @relu(tensor<16xf32>) -> tensor<16xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func private @relu2d(tensor<4x4xf32>) -> tensor<4x4xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func @refused(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>) {
  %from_arg = func.call @relu(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %a = func.call @k(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %used_later = func.call @relu(%a) : (tensor<16xf32>) -> tensor<16xf32>
  %e = func.call @k(%a) : (tensor<16xf32>) -> tensor<16xf32>
  %escaping = func.call @relu(%e) : (tensor<16xf32>) -> tensor<16xf32>
  %f = func.call @k(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %v = func.call @flat(%f) : (tensor<16xf32>) -> tensor<4x4xf32>
  %alias_used_later = func.call @relu2d(%v) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %g = func.call @k(%f) : (tensor<16xf32>) -> tensor<16xf32>
  func.return %e, %g, %alias_used_later : tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>
}

// CHECK-LABEL: func.func @refused(
// CHECK:         %from_arg_storage = memory.alloc_storage
// CHECK:         %used_later_storage = memory.alloc_storage
// CHECK:         %escaping_storage = memory.alloc_storage
// CHECK:         %alias_used_later_storage = memory.alloc_storage
// CHECK-NOT:     memory.inplace_of
