// RUN: memplan-opt %s --split-input-file --plan-report='format=trace' -o %t.mlir 2>&1 | filecheck %s
// The IR is unchanged, and output=FILE gets the trace (of the last chunk):
// RUN: memplan-opt %s --split-input-file --plan-report='format=trace output="%t.json"' -o %t.mlir 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty
// RUN: memplan-opt %s --split-input-file -o %t.ref.mlir && diff %t.mlir %t.ref.mlir
// RUN: filecheck %s --check-prefix=FILE < %t.json
// QUIET-NOT: {{.}}

// A planned function (the one of plan-report-svg.mlir): %a [0, 5) at 0,
// %b [2, 9) at 64, %c [6, 15) at 320, %d [10, 13) at 0 of @sram. One
// process per function and pool; one op is one microsecond. The counters
// change where a lifetime starts or ends: "live" is the sum of the live
// sizes, peaking at 384 = %b + %c (the lower bound) over [6, 9); "used" is
// the top of the highest live storage, peaking at 448 = 320 + 128 (the
// pool's used bytes) from 6. Slices go to the lowest thread free at their
// start: %a 1, %b 2, %c 1 (%a ended at 5), %d 2 (%b ended at 9).
module @tiny_net {
  memory.pool @sram size 512
  func.func private @k(memref<16xf32>, memref<16xf32>)
  func.func @planned() -> memref<16xf32> {
    %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
    %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
    %b = memory.alloc_storage at @sram[64] : !memory.storage<256>
    %tb = memory.alloc_tensor %b[0] : !memory.storage<256> -> memref<16xf32>
    memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
    memory.kill %a : !memory.storage<64>
    %c = memory.alloc_storage at @sram[320] : !memory.storage<128>
    %tc = memory.alloc_tensor %c[0] : !memory.storage<128> -> memref<16xf32>
    memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
    memory.kill %b : !memory.storage<256>
    %d = memory.alloc_storage at @sram[0] : !memory.storage<64>
    %td = memory.alloc_tensor %d[0] : !memory.storage<64> -> memref<16xf32>
    memory.invoke @k ins(%td : memref<16xf32>) outs(%tc : memref<16xf32>)
    memory.kill %d : !memory.storage<64>
    func.return %tc : memref<16xf32>
  }
}
// CHECK:       {"traceEvents":[
// CHECK-LABEL: {"ph":"M","ts":0,"pid":1,"tid":0,"name":"process_name","args":{"name":"@planned @sram"}},
// CHECK-NEXT:  {"ph":"M","ts":0,"pid":1,"tid":0,"name":"process_sort_index","args":{"sort_index":1}},
// CHECK-NEXT:  {"ph":"M","ts":0,"pid":1,"tid":1,"name":"thread_name","args":{"name":"buffers 1"}},
// CHECK-NEXT:  {"ph":"M","ts":0,"pid":1,"tid":1,"name":"thread_sort_index","args":{"sort_index":1}},
// CHECK-NEXT:  {"ph":"M","ts":0,"pid":1,"tid":2,"name":"thread_name","args":{"name":"buffers 2"}},
// CHECK-NEXT:  {"ph":"M","ts":0,"pid":1,"tid":2,"name":"thread_sort_index","args":{"sort_index":2}},
// CHECK-NEXT:  {"ph":"C","ts":0,"pid":1,"tid":0,"name":"live","args":{"bytes":64}},
// CHECK-NEXT:  {"ph":"C","ts":0,"pid":1,"tid":0,"name":"used","args":{"bytes":64}},
// CHECK-NEXT:  {"ph":"C","ts":2,"pid":1,"tid":0,"name":"live","args":{"bytes":320}},
// CHECK-NEXT:  {"ph":"C","ts":2,"pid":1,"tid":0,"name":"used","args":{"bytes":320}},
// CHECK-NEXT:  {"ph":"C","ts":5,"pid":1,"tid":0,"name":"live","args":{"bytes":256}},
// CHECK-NEXT:  {"ph":"C","ts":5,"pid":1,"tid":0,"name":"used","args":{"bytes":320}},
// CHECK-NEXT:  {"ph":"C","ts":6,"pid":1,"tid":0,"name":"live","args":{"bytes":384}},
// CHECK-NEXT:  {"ph":"C","ts":6,"pid":1,"tid":0,"name":"used","args":{"bytes":448}},
// CHECK-NEXT:  {"ph":"C","ts":9,"pid":1,"tid":0,"name":"live","args":{"bytes":128}},
// CHECK-NEXT:  {"ph":"C","ts":9,"pid":1,"tid":0,"name":"used","args":{"bytes":448}},
// CHECK-NEXT:  {"ph":"C","ts":10,"pid":1,"tid":0,"name":"live","args":{"bytes":192}},
// CHECK-NEXT:  {"ph":"C","ts":10,"pid":1,"tid":0,"name":"used","args":{"bytes":448}},
// CHECK-NEXT:  {"ph":"C","ts":13,"pid":1,"tid":0,"name":"live","args":{"bytes":128}},
// CHECK-NEXT:  {"ph":"C","ts":13,"pid":1,"tid":0,"name":"used","args":{"bytes":448}},
// CHECK-NEXT:  {"ph":"C","ts":15,"pid":1,"tid":0,"name":"live","args":{"bytes":0}},
// CHECK-NEXT:  {"ph":"C","ts":15,"pid":1,"tid":0,"name":"used","args":{"bytes":0}},
// CHECK-NEXT:  {"ph":"X","ts":0,"dur":5,"pid":1,"tid":1,"name":"a","cat":"constant","args":{"size":64,"offset":0,"planned":true,"alignment":64,"kind":"constant","lifetime":"[0, 5)"}},
// CHECK-NEXT:  {"ph":"X","ts":2,"dur":7,"pid":1,"tid":2,"name":"b","cat":"activation","args":{"size":256,"offset":64,"planned":true,"alignment":64,"kind":"activation","lifetime":"[2, 9)"}},
// CHECK-NEXT:  {"ph":"X","ts":6,"dur":9,"pid":1,"tid":1,"name":"c","cat":"output","args":{"size":128,"offset":320,"planned":true,"alignment":64,"kind":"output","lifetime":"[6, 15)"}},
// CHECK-NEXT:  {"ph":"X","ts":10,"dur":3,"pid":1,"tid":2,"name":"d","cat":"constant","args":{"size":64,"offset":0,"planned":true,"alignment":64,"kind":"constant","lifetime":"[10, 13)"}}
// CHECK-NEXT:  ],
// CHECK-NEXT:  "otherData":{"generator":"memplan plan-report format=trace","time":"1 us of trace time = 1 op number of the function","module":"tiny_net","pools":[{"pid":1,"function":"planned","pool":"sram","used":448,"lower_bound":384,"planned":true}]}}

// -----

// Unplanned storages yielded out of the two branches of an scf.if: both
// live until the invoke after the if (%x [1, 10), %y [5, 10)), but never on
// one path, so "live" counts the larger branch, 256, not 384 (the lower
// bound). Without a plan each has its own bytes, stacked in order of start
// (%x at 0, %y at 256), so "used" peaks at the sum, 384 (the pseudo-pool's
// used bytes). A second function gets its own process.
func.func private @use(memref<16xf32>)
func.func private @w(memref<16xf32>)
func.func @branches(%p: i1) {
  %r = scf.if %p -> (memref<16xf32>) {
    %x = memory.alloc_storage : !memory.storage<256>
    %tx = memory.alloc_tensor %x[0] : !memory.storage<256> -> memref<16xf32>
    memory.invoke @w outs(%tx : memref<16xf32>)
    scf.yield %tx : memref<16xf32>
  } else {
    %y = memory.alloc_storage : !memory.storage<128>
    %ty = memory.alloc_tensor %y[0] : !memory.storage<128> -> memref<16xf32>
    memory.invoke @w outs(%ty : memref<16xf32>)
    scf.yield %ty : memref<16xf32>
  }
  memory.invoke @use ins(%r : memref<16xf32>)
  func.return
}
func.func @other() {
  %s = memory.alloc_storage : !memory.storage<32>
  func.return
}
// CHECK-LABEL: {"ph":"M","ts":0,"pid":1,"tid":0,"name":"process_name","args":{"name":"@branches (unplanned)"}},
// CHECK:       {"ph":"C","ts":1,"pid":1,"tid":0,"name":"live","args":{"bytes":256}},
// CHECK-NEXT:  {"ph":"C","ts":1,"pid":1,"tid":0,"name":"used","args":{"bytes":256}},
// CHECK-NEXT:  {"ph":"C","ts":5,"pid":1,"tid":0,"name":"live","args":{"bytes":256}},
// CHECK-NEXT:  {"ph":"C","ts":5,"pid":1,"tid":0,"name":"used","args":{"bytes":384}},
// CHECK-NEXT:  {"ph":"C","ts":10,"pid":1,"tid":0,"name":"live","args":{"bytes":0}},
// CHECK-NEXT:  {"ph":"C","ts":10,"pid":1,"tid":0,"name":"used","args":{"bytes":0}},
// CHECK-NEXT:  {"ph":"X","ts":1,"dur":9,"pid":1,"tid":1,"name":"x","cat":"activation","args":{"size":256,"offset":0,"planned":false,{{.*}}}},
// CHECK-NEXT:  {"ph":"X","ts":5,"dur":5,"pid":1,"tid":2,"name":"y","cat":"activation","args":{"size":128,"offset":256,"planned":false,{{.*}}}},
// CHECK-LABEL: {"ph":"M","ts":0,"pid":2,"tid":0,"name":"process_name","args":{"name":"@other (unplanned)"}},
// CHECK:       {"ph":"X","ts":0,"dur":1,"pid":2,"tid":1,"name":"s",
// CHECK-NEXT:  ],
// CHECK-NEXT:  "otherData":{{.*}}"module":null,"pools":[{"pid":1,"function":"branches","pool":"(unplanned)","used":384,"lower_bound":256,"planned":false},{"pid":2,{{.*}}}]}}

// -----

// No static storage: an empty event list, still a valid trace.
func.func @empty() {
  func.return
}
// CHECK:       {"traceEvents":[
// CHECK-EMPTY:
// CHECK-NEXT:  ],
// CHECK-NEXT:  "otherData":{{.*}}"pools":[]}}
// FILE:        {"traceEvents":[
// FILE-EMPTY:
// FILE-NEXT:   ],
// FILE-NEXT:   "otherData":{{.*}}"pools":[]}}
