// RUN: memplan-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// `memory.reserve` (docs/dialect.md): a storage's bytes as a size expression
// of the function's ranged dims. One case per verifier rule; each message
// names the storage, the text and the numbers.

// A valid reserve: 4 bytes per row of 16, at most 4096 at N = 64.
func.func @valid(%n : index) attributes {memory.dim_ranges = {N = array<i64: 1, 64>}} {
  %s = memory.alloc_storage(%n) max 4096 {memory.reserve = "64*N"} : !memory.storage<?>
  func.return
}
// CHECK-LABEL: func.func @valid
// CHECK:         memory.alloc_storage(%n) max 4096 {memory.reserve = "64*N"} : !memory.storage<?>

// -----

// A static storage's size is its type's: a reserve is for dynamic ones.
func.func @static_storage() attributes {memory.dim_ranges = {N = array<i64: 1, 64>}} {
  %s = memory.alloc_storage {memory.reserve = "64*N"} : !memory.storage<4096>
  func.return
}
// CHECK: storage %s: memory.reserve is only for a dynamic storage, not !memory.storage<4096>

// -----

// Every dim the reserve reads is one of the function's ranged dims.
func.func @unknown_dim(%n : index) attributes {memory.dim_ranges = {N = array<i64: 1, 64>}} {
  %s = memory.alloc_storage(%n) max 4096 {memory.reserve = "64*M"} : !memory.storage<?>
  func.return
}
// CHECK: storage %s: memory.reserve '64*M' reads dim 'M', which is not in the function's memory.dim_ranges (dims: 'N')

// -----

// At the ranges' upper ends the reserve is at most `max` (it is monotone, so
// that bounds it over the whole range): 64*N is 8192 at N = 128.
func.func @above_max(%n : index) attributes {memory.dim_ranges = {N = array<i64: 1, 128>}} {
  %s = memory.alloc_storage(%n) max 4096 {memory.reserve = "64*N"} : !memory.storage<?>
  func.return
}
// CHECK: storage %s: memory.reserve '64*N' is 8192 bytes at N=128, above its max 4096

// -----

// A text that is no size expression names the column.
func.func @unparsable(%n : index) attributes {memory.dim_ranges = {N = array<i64: 1, 64>}} {
  %s = memory.alloc_storage(%n) max 4096 {memory.reserve = "64*N -"} : !memory.storage<?>
  func.return
}
// CHECK: storage %s: memory.reserve: size expression '64*N -': expected '+', '*' or the end at column 6, found '-'

// -----

// A divisor of 0 is no size expression either.
func.func @zero_divisor(%n : index) attributes {memory.dim_ranges = {N = array<i64: 1, 64>}} {
  %s = memory.alloc_storage(%n) max 4096 {memory.reserve = "ceildiv(N, 0)"} : !memory.storage<?>
  func.return
}
// CHECK: storage %s: memory.reserve: size expression 'ceildiv(N, 0)': a divisor must be a positive integer (got 0) at column 12
