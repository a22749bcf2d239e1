// RUN: memplan-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s
// Plain upstream xdsl-opt (memplan's `xdsl.universe` plugin) reports every
// case here as memplan-opt does: each check is the dialect's own, and the
// kill-order checks that only memplan's tools run are in invalid-kill-order.mlir.
// RUN: xdsl-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file > %t.xdsl
// RUN: memplan-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | diff %t.xdsl -

// One case per verifier rule of docs/design.md (docs/dialect.md); each message names the value and
// the numbers involved.

// Storage alignment must be a power of two.
func.func @align_not_pow2() {
  %s = memory.alloc_storage align 48 : !memory.storage<64>
  func.return
}
// CHECK: storage %s: alignment must be a power of two, got 48

// -----

// Pool alignment must be a power of two.
memory.pool @p align 24
// CHECK: pool @p: alignment must be a power of two, got 24

// -----

// Sizes, offsets and `used` are i64: a storage type beyond 2^63-1 bytes is
// an error, never a wrapped negative size.
func.func @huge_storage() {
  %s = memory.alloc_storage : !memory.storage<9223372036854775808>
  func.return
}
// CHECK: storage size 9223372036854775808 exceeds 2^63-1 bytes

// -----

// The same for a number of the custom syntax, at the literal.
memory.pool @huge size 9223372036854775808
// CHECK: pool size 9223372036854775808 exceeds 2^63-1 bytes

// -----

// A dynamic-size storage is pinned only with a `max` bound: the plan must
// know how many bytes to reserve.
memory.pool @sram size 65536
func.func @pinned_unbounded(%n : index) {
  %s = memory.alloc_storage(%n) at @sram[0] : !memory.storage<?>
  func.return
}
// CHECK: storage %s: a dynamic-size storage can only be pinned with a `max` bound

// -----

// A bound below the static size contradicts it.
func.func @max_below_size() {
  %s = memory.alloc_storage max 32 : !memory.storage<64>
  func.return
}
// CHECK: storage %s: max 32 is below its static size of 64 bytes

// -----

// A negative bound.
func.func @negative_max(%n : index) {
  %s = memory.alloc_storage(%n) max -1 : !memory.storage<?>
  func.return
}
// CHECK: storage %s: max -1 must be non-negative

// -----

// The bound reserves bytes in the pool: 61440 + 8192 overflows 65536.
memory.pool @sram size 65536
func.func @bound_overflows_pool(%n : index) {
  %s = memory.alloc_storage(%n) max 8192 at @sram[61440] : !memory.storage<?>
  func.return
}
// CHECK: storage %s: 8192 bytes at offset 61440 overflow pool @sram of 65536 bytes

// -----

// A pinned offset is a multiple of the storage's alignment (64).
memory.pool @sram size 65536
func.func @pinned_misaligned() {
  %s = memory.alloc_storage at @sram[32] : !memory.storage<64>
  func.return
}
// CHECK: storage %s: offset 32 in @sram is not a multiple of its alignment 64

// -----

// ... and of the pool's alignment (256).
memory.pool @sram size 65536 align 256
func.func @pinned_pool_misaligned() {
  %s = memory.alloc_storage at @sram[64] : !memory.storage<64>
  func.return
}
// CHECK: storage %s: offset 64 is not a multiple of the alignment 256 of pool @sram

// -----

// A tensor offset is a multiple of its element size (f32: 4 bytes).
func.func @tensor_misaligned() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[2] : !memory.storage<64> -> memref<4xf32>
  func.return
}
// CHECK: tensor %t: offset 2 is not a multiple of the element size 4 of f32

// -----

// A tensor's `align` is a power of two.
func.func @tensor_align_not_pow2() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] align 12 : !memory.storage<64> -> memref<4xf32>
  func.return
}
// CHECK: tensor %t: align must be a power of two, got 12

// -----

// A tensor's `align` divides its static offset (16 is 16-aligned at most).
func.func @tensor_align_offset() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[16] align 32 : !memory.storage<64> -> memref<4xf32>
  func.return
}
// CHECK: tensor %t: offset 16 is not a multiple of its align 32

// -----

// ... and its storage's alignment: a 128-aligned tensor in a 64-aligned
// storage is not guaranteed, whatever the offset (static or dynamic).
func.func @tensor_align_storage(%n : index) {
  %s = memory.alloc_storage : !memory.storage<256>
  %t = memory.alloc_tensor %s[%n] align 128 : !memory.storage<256> -> memref<4xf32>
  func.return
}
// CHECK: tensor %t: align 128 is not guaranteed by the alignment 64 of its storage %s

// -----

// A tensor must fit its static storage: 1024 bytes at 3072 end at 4096 + 1024.
func.func @tensor_overflow() {
  %s = memory.alloc_storage : !memory.storage<4096>
  %t = memory.alloc_tensor %s[3584] : !memory.storage<4096> -> memref<256xf32>
  func.return
}
// CHECK: tensor %t: tensor of 1024 bytes at offset 3584 overflows storage of 4096 bytes

// -----

// A dynamic storage type needs a size operand.
func.func @dynamic_without_size() {
  %s = memory.alloc_storage : !memory.storage<?>
  func.return
}
// CHECK: storage %s: dynamic type !memory.storage<?> needs a size operand

// -----

// A static storage type takes no size operand.
func.func @static_with_size(%n : index) {
  %s = memory.alloc_storage(%n) : !memory.storage<64>
  func.return
}
// CHECK: storage %s: static type !memory.storage<64> takes no size operand

// -----

// One dim operand per `?` dim.
func.func @dim_count(%n : index) {
  %s = memory.alloc_storage(%n) : !memory.storage<?>
  %t = memory.alloc_tensor %s[0](%n) : !memory.storage<?> -> memref<?x?xf32>
  func.return
}
// CHECK: tensor %t: memref<?x?xf32> has 2 dynamic dims but 1 dim operands are given

// -----

// `index` has no fixed bit width, so its tensors have no byte size.
func.func @index_elements() {
  %s = memory.alloc_storage : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<4xindex>
  func.return
}
// CHECK: element type index of memref<4xindex> has no fixed bit width

// -----

// A pinned storage names a pool that exists.
func.func @unknown_pool() {
  %s = memory.alloc_storage at @nowhere[0] : !memory.storage<64>
  func.return
}
// CHECK: storage %s: unknown pool @nowhere

// -----

// Candidate pools must exist too.
memory.pool @sram
func.func @unknown_candidate() {
  %s = memory.alloc_storage pools [@sram, @dtcm] : !memory.storage<64>
  func.return
}
// CHECK: storage %s: unknown pool @dtcm

// -----

// 4096 bytes at 8192 end at 12288, past the 8192-byte pool.
memory.pool @sram size 8192
func.func @past_pool_end() {
  %s = memory.alloc_storage at @sram[8192] : !memory.storage<4096>
  func.return
}
// CHECK: storage %s: 4096 bytes at offset 8192 overflow pool @sram of 8192 bytes

// -----

// The storage's device must be among the pool's targets.
memory.pool @npu_sram targets ["npu"]
func.func @device_not_targeted() {
  %s = memory.alloc_storage pools [@npu_sram] : !memory.storage<64>
  func.return
}
// CHECK: storage %s: device "cpu" is not among the targets ['npu'] of pool @npu_sram

// -----

// A kernel cannot write into a read-only pool.
memory.pool @flash access ro
func.func private @fill(memref<16xf32>)
func.func @write_ro() {
  %s = memory.alloc_storage at @flash[0] : !memory.storage<64>
  %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @fill outs(%t : memref<16xf32>)
  func.return
}
// CHECK: invoke of @fill writes %t in read-only pool @flash

// -----

// A pool never reports more bytes used than it has.
memory.pool @sram size 1024 used 2048
// CHECK: pool @sram: used 2048 bytes exceeds its size of 1024 bytes

// -----

// A storage pinned in a pool ends within the pool's `used` (what a runtime
// allocates for it): 262144 + 128 = 262272 > 262148.
memory.pool @workspace used 262148
func.func @past_used() {
  %s = memory.alloc_storage at @workspace[262144] : !memory.storage<128>
  func.return
}
// CHECK: storage %s: bytes [262144, 262272) run past the used size of pool @workspace (262148 bytes)


// -----

// Function arguments belong to the caller.
func.func @kill_argument(%a : memref<16xf32>) {
  memory.kill %a : memref<16xf32>
  func.return
}
// CHECK: cannot kill function argument %a

// -----

// A loop body runs again after its kill of a value defined outside the loop.
func.func @kill_in_loop(%lb : index, %ub : index, %st : index) {
  %s = memory.alloc_storage : !memory.storage<64>
  scf.for %i = %lb to %ub step %st {
    memory.kill %s : !memory.storage<64>
  }
  func.return
}
// CHECK: %s is killed inside scf.for but defined outside it: the next iteration would use it after its kill

// -----

// Pool access is rw or ro.
memory.pool @p access wo
// CHECK: expected access mode 'rw' or 'ro'

// -----

// The same through a cf loop: ^loop runs again without redefining %s.
func.func @kill_in_cf_loop(%c : i1) {
  %s = memory.alloc_storage : !memory.storage<64>
  cf.br ^loop
^loop:
  memory.kill %s : !memory.storage<64>
  cf.cond_br %c, ^loop, ^exit
^exit:
  func.return
}
// CHECK: %s is killed inside a cf loop but defined outside it: the next trip would kill it again

// -----

// A storage defined in the loop block itself is a new value on every trip.
func.func @kill_in_cf_loop_defined_inside(%c : i1) {
  cf.br ^loop
^loop:
  %s = memory.alloc_storage : !memory.storage<64>
  memory.kill %s : !memory.storage<64>
  cf.cond_br %c, ^loop, ^exit
^exit:
  func.return
}
// CHECK-LABEL: func.func @kill_in_cf_loop_defined_inside
// CHECK:         memory.kill %s : !memory.storage<64>
