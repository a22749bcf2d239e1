// RUN: not memplan-opt %s --split-input-file --manifest-alloc --insert-kills --coalesce --usmp 2>&1 | filecheck %s

// After coalesce, a storage that fits no pool is the merged one, named after
// the first tensor it holds (%a_storage): the diagnostic lists the tensors it
// holds, largest first. Here %a and %b are live together and need 2048 bytes of a 1024-byte
// pool.
memory.pool @small size 1024 targets ["cpu"]
func.func private @k(tensor<256xf32>) -> tensor<256xf32>
func.func private @last(tensor<256xf32>) -> tensor<4xf32>
func.func @together(%x: tensor<256xf32>) -> tensor<4xf32> {
  %a = func.call @k(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %b = func.call @k(%a) : (tensor<256xf32>) -> tensor<256xf32>
  %c = func.call @k(%b) : (tensor<256xf32>) -> tensor<256xf32>
  %y = func.call @last(%c) : (tensor<256xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK:      error: usmp: storage %a_storage in @together ({{[0-9]+}} bytes, {{.*}}) fits in none of its candidate pools:
// CHECK-NEXT:   @small: size 1024
// CHECK-NEXT:   it holds 3 tensors: %{{[abc]}} (1024 bytes at offset {{[0-9]+}}, live [{{[0-9]+}}, {{[0-9]+}})), %{{[abc]}} (1024 bytes at offset {{[0-9]+}}, live {{.*}}), %{{[abc]}} (1024 bytes {{.*}})

// -----

// A tensor that alone is larger than the pool is named as such.
memory.pool @small size 1024 targets ["cpu"]
func.func private @k(tensor<256xf32>) -> tensor<256xf32>
func.func private @grow(tensor<256xf32>) -> tensor<1024xf32>
func.func private @last(tensor<1024xf32>) -> tensor<4xf32>
func.func @alone(%x: tensor<256xf32>) -> tensor<4xf32> {
  %s = func.call @k(%x) : (tensor<256xf32>) -> tensor<256xf32>
  %big = func.call @grow(%s) : (tensor<256xf32>) -> tensor<1024xf32>
  %y = func.call @last(%big) : (tensor<1024xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK:      error: usmp: storage %s_storage in @alone
// CHECK:        it holds 2 tensors: %big (4096 bytes at offset {{[0-9]+}}, live {{.*}}), %s (1024 bytes {{.*}}); %big alone (4096 bytes) is larger than the pool
