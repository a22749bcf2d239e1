// RUN: memplan-opt %s --split-input-file --plan-report -o %t.mlir 2>&1 | filecheck %s
// RUN: memplan-opt %s --split-input-file --plan-report='format=json' -o %t.mlir 2>&1 | filecheck %s --check-prefix=JSON
// The IR is unchanged:
// RUN: memplan-opt %s --split-input-file --plan-report -o %t.mlir 2>/dev/null && memplan-opt %s --split-input-file -o %t.ref.mlir && diff %t.mlir %t.ref.mlir
// output=FILE writes the report there instead of stderr (each chunk of the
// split input rewrites the file, so it ends up with the last chunk's report):
// RUN: memplan-opt %s --split-input-file --plan-report='output="%t.txt"' -o %t.mlir 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty
// RUN: filecheck %s --check-prefix=FILE < %t.txt
// QUIET-NOT: {{.}}

// A planned function. Numbers: %a 0, %ta 1, %b 2, %tb 3, invoke 4, kill 5,
// %c 6, %tc 7, invoke 8, %d 9, %e 10, %f 11, kill 12, constant 13, %g 14.
// @sram: %a [0, 5) at 0, %b [2, 9) at 64, %c [6, 9) at 320, so used is
// 320 + 128 = 448; the lower bound is the peak of live bytes, %b + %c = 384
// (over [6, 9)), and 448 / 384 = 1.17. @dram holds %d alone. %e [10, 12) and
// %f [11, 12) are not pinned: "(unplanned)" uses 40 + 24 = 64 bytes, as much
// as their peak since they are live together. %g has a dynamic size.
memory.pool @sram size 1024
memory.pool @dram
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @planned(%x: memref<16xf32>) {
  %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %b = memory.alloc_storage at @sram[64] : !memory.storage<256>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<256> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  %c = memory.alloc_storage at @sram[320] : !memory.storage<128>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
  %d = memory.alloc_storage at @dram[0] : !memory.storage<100>
  %e = memory.alloc_storage : !memory.storage<40>
  %f = memory.alloc_storage : !memory.storage<24>
  memory.kill %e : !memory.storage<40>
  %n = arith.constant 16 : index
  %g = memory.alloc_storage(%n) : !memory.storage<?>
  func.return
}
// CHECK-LABEL: function @planned: 7 storages, 16 ops
// CHECK-NEXT:    pool         size  no planning  used  lower bound  used/lb  buffers  largest
// CHECK-NEXT:    @sram        1024          448   448          384    1.17x        3  b (256), c (128), a (64)
// CHECK-NEXT:    @dram           -          100   100          100    1.00x        1  d (100)
// CHECK-NEXT:    (unplanned)     -           64    64           64    1.00x        2  e (40), f (24)
// CHECK-NEXT:    dynamic-size storages without a max (not planned, allocated at run time):
// CHECK-NEXT:      g
// CHECK-NEXT:  legend: size - = unbounded (grows to what the plan uses); no planning = one allocation per storage; lower bound = peak of live bytes

// JSON-LABEL: "name": "planned",
// JSON-NEXT:  "ops": 16,
// JSON-NEXT:  "pools": [
// JSON-NEXT:    {"name": "sram", "size": 1024, "used": 448, "lower_bound": 384, "no_planning": 448, "base_alignment": 64, "buffer_count": 3},
// JSON-NEXT:    {"name": "dram", "size": null, "used": 100, "lower_bound": 100, "no_planning": 100, "base_alignment": 64, "buffer_count": 1},
// JSON-NEXT:    {"name": "(unplanned)", "size": null, "used": 64, "lower_bound": 64, "no_planning": 64, "base_alignment": 64, "buffer_count": 2}
// JSON-NEXT:  ],
// JSON-NEXT:  "buffers": [
// JSON-NEXT:    {"name": "a", "size": 64, "alignment": 64, "start": 0, "end": 5, "pool": "sram", "offset": 0, "device": "cpu", "escapes": false, "read_only": true, "branch": []},
// JSON-NEXT:    {"name": "b", "size": 256, "alignment": 64, "start": 2, "end": 9, "pool": "sram", "offset": 64, "device": "cpu", "escapes": false, "read_only": false, "branch": []},
// JSON-NEXT:    {"name": "c", "size": 128, "alignment": 64, "start": 6, "end": 9, "pool": "sram", "offset": 320, "device": "cpu", "escapes": false, "read_only": false, "branch": []},
// JSON-NEXT:    {"name": "d", "size": 100, "alignment": 64, "start": 9, "end": 10, "pool": "dram", "offset": 0, "device": "cpu", "escapes": false, "read_only": true, "branch": []},
// JSON-NEXT:    {"name": "e", "size": 40, "alignment": 64, "start": 10, "end": 12, "pool": "(unplanned)", "offset": null, "device": "cpu", "escapes": false, "read_only": true, "branch": []},
// JSON-NEXT:    {"name": "f", "size": 24, "alignment": 64, "start": 11, "end": 12, "pool": "(unplanned)", "offset": null, "device": "cpu", "escapes": false, "read_only": true, "branch": []},
// JSON-NEXT:    {"name": "g", "size": null, "alignment": 64, "start": 14, "end": 15, "pool": "(dynamic)", "offset": null, "device": "cpu", "escapes": false, "read_only": true, "branch": []}
// JSON-NEXT:  ],
// JSON-NEXT:  "tensors": [
// JSON-NEXT:    {"name": "ta", "storage": "a", "offset": 0, "size": 64, "start": 1, "end": 5},
// JSON-NEXT:    {"name": "tb", "storage": "b", "offset": 0, "size": 64, "start": 3, "end": 9},
// JSON-NEXT:    {"name": "tc", "storage": "c", "offset": 0, "size": 64, "start": 7, "end": 9}
// JSON-NEXT:  ]

// -----

// Two functions share @sram one after the other, so the module table's
// bound is the larger function's peak, 512, not the sum. A pool a function
// does not use is left out of its text table (but not of the JSON).
memory.pool @sram size 1024
memory.pool @dram
func.func @first() {
  %y = memory.alloc_storage at @sram[0] : !memory.storage<256>
  %d = memory.alloc_storage at @dram[0] : !memory.storage<16>
  func.return
}
func.func @second() {
  %z = memory.alloc_storage at @sram[0] : !memory.storage<512>
  func.return
}
// CHECK-LABEL: function @first: 2 storages, 3 ops
// CHECK-NEXT:    pool   size  no planning  used  lower bound  used/lb  buffers  largest
// CHECK-NEXT:    @sram  1024          256   256          256    1.00x        1  y (256)
// CHECK-NEXT:    @dram     -           16    16           16    1.00x        1  d (16)
// CHECK-LABEL: function @second: 1 storage, 2 ops
// CHECK-NEXT:    pool   size  no planning  used  lower bound  used/lb  buffers  largest
// CHECK-NEXT:    @sram  1024          512   512          512    1.00x        1  z (512)
// CHECK-NEXT:  module
// CHECK-NEXT:    pool   size  no planning  used  lower bound  used/lb  buffers  largest
// CHECK-NEXT:    @sram  1024          768   512          512    1.00x        2  second.z (512), first.y (256)
// CHECK-NEXT:    @dram     -           16    16           16    1.00x        1  first.d (16)

// JSON-LABEL: "name": "second",
// JSON:       "pools": [
// JSON-NEXT:    {"name": "sram", "size": 1024, "used": 512, "lower_bound": 512, "no_planning": 512, "base_alignment": 64, "buffer_count": 1},
// JSON-NEXT:    {"name": "dram", "size": null, "used": 0, "lower_bound": 0, "no_planning": 0, "base_alignment": 16, "buffer_count": 0}
// JSON:       "pools": [
// JSON-NEXT:    {"name": "sram", "size": 1024, "used": 512, "lower_bound": 512, "no_planning": 768, "base_alignment": 64, "buffer_count": 2},
// JSON-NEXT:    {"name": "dram", "size": null, "used": 16, "lower_bound": 16, "no_planning": 16, "base_alignment": 64, "buffer_count": 1}
// JSON-NEXT:  ]

// -----

// A dynamic-size storage with a `max` bound is planned at its bound: %b
// reserves 256 bytes at 0 of @sram and %c 128 at 320 (used 256 + 64 + 128
// = 448), and the report names each with its bound, one per line (a real
// model has a hundred of them), and "size_is_bound" in the JSON report.
memory.pool @sram size 1024
func.func @bounded(%n: index) {
  %b = memory.alloc_storage(%n) max 256 at @sram[0] : !memory.storage<?>
  %s = memory.alloc_storage at @sram[256] : !memory.storage<64>
  %c = memory.alloc_storage(%n) max 128 at @sram[320] : !memory.storage<?>
  memory.kill %b : !memory.storage<?>
  memory.kill %s : !memory.storage<64>
  memory.kill %c : !memory.storage<?>
  func.return
}
// CHECK-LABEL: function @bounded: 3 storages, 7 ops
// CHECK-NEXT:    pool   size  no planning  used  lower bound  used/lb  buffers  largest
// CHECK-NEXT:    @sram  1024          448   448          448    1.00x        3  b (256), c (128), s (64)
// CHECK-NEXT:    dynamic-size storages planned at their bound:
// CHECK-NEXT:      b (max 256)
// CHECK-NEXT:      c (max 128)
// JSON-LABEL: "name": "bounded",
// JSON:       {"name": "b", "size": 256, "alignment": 64, "start": 0, "end": 3, "pool": "sram", "offset": 0, "device": "cpu", "escapes": false, "read_only": true, "branch": [], "size_is_bound": true},
// JSON:       {"name": "c", "size": 128, "alignment": 64, "start": 2, "end": 5, "pool": "sram", "offset": 320, "device": "cpu", "escapes": false, "read_only": true, "branch": [], "size_is_bound": true}

// -----

// Storages in the two branches of an scf.if never live together: the bound
// takes the larger branch (96), not the sum. Nothing is planned, so
// "(unplanned)" uses 32 + 96 = 128.
func.func @branches(%c: i1) {
  scf.if %c {
    %s = memory.alloc_storage : !memory.storage<32>
    scf.yield
  } else {
    %t = memory.alloc_storage : !memory.storage<96>
    scf.yield
  }
  func.return
}
// CHECK-LABEL: function @branches: 2 storages, 6 ops
// CHECK-NEXT:    pool         size  no planning  used  lower bound  used/lb  buffers  largest
// CHECK-NEXT:    (unplanned)     -          128   128           96    1.33x        2  t (96), s (32)
// FILE:      function @branches: 2 storages, 6 ops
// FILE-NEXT:   pool         size  no planning  used  lower bound  used/lb  buffers  largest
// FILE-NEXT:   (unplanned)     -          128   128           96    1.33x        2  t (96), s (32)
// FILE-NEXT: legend: size - = unbounded (grows to what the plan uses); no planning = one allocation per storage; lower bound = peak of live bytes
// FILE-NOT:  {{.}}
