// RUN: memplan-opt %s --manifest-alloc=alignment=16 --split-input-file | filecheck %s
// RUN: memplan-opt %s -p 'manifest-alloc{alignment=16},insert-kills,usmp' --split-input-file | filecheck %s --check-prefix=USMP
// RUN: not memplan-opt %s --manifest-alloc=alignment=12 2>&1 | filecheck %s --check-prefix=BAD

// `alignment=16` (TFLM's arena alignment) aligns each storage to 16 bytes,
// or to its element when that is larger (2xi1024: 128); usmp packs the
// 16- and 20-byte storages side by side after the 256-byte one (292 bytes,
// 336 at the default 64).
func.func private @make_f32() -> tensor<5xf32>
func.func private @use(tensor<5xf32>) -> tensor<4xf32>
func.func private @make_i1024() -> tensor<2xi1024>
func.func @aligned() -> (tensor<5xf32>, tensor<4xf32>, tensor<2xi1024>) {
  %a = func.call @make_f32() : () -> tensor<5xf32>
  %b = func.call @use(%a) : (tensor<5xf32>) -> tensor<4xf32>
  %c = func.call @make_i1024() : () -> tensor<2xi1024>
  func.return %a, %b, %c : tensor<5xf32>, tensor<4xf32>, tensor<2xi1024>
}

// CHECK-LABEL: func.func @aligned()
// CHECK:         %a_storage = memory.alloc_storage align 16 : !memory.storage<20>
// CHECK:         %b_storage = memory.alloc_storage align 16 : !memory.storage<16>
// CHECK:         %c_storage = memory.alloc_storage align 128 : !memory.storage<256>

// USMP:       memory.pool @workspace_cpu targets ["cpu"] used 292
// USMP-LABEL: func.func @aligned()
// USMP:         %a_storage = memory.alloc_storage align 16 at @workspace_cpu[272] : !memory.storage<20>
// USMP:         %b_storage = memory.alloc_storage align 16 at @workspace_cpu[256] : !memory.storage<16>
// USMP:         %c_storage = memory.alloc_storage align 128 at @workspace_cpu[0] : !memory.storage<256>

// A power of two is required.
// BAD: manifest-alloc: alignment must be a power of two (got 12)
