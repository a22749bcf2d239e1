// RUN: memplan-opt %s --split-input-file --plan-report='format=svg' -o %t.mlir 2>&1 | filecheck %s
// The IR is unchanged, and output=FILE gets the SVG (of the last chunk):
// RUN: memplan-opt %s --split-input-file --plan-report='format=svg output="%t.svg"' -o %t.mlir 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty
// RUN: memplan-opt %s --split-input-file -o %t.ref.mlir && diff %t.mlir %t.ref.mlir
// RUN: filecheck %s --check-prefix=FILE < %t.svg
// QUIET-NOT: {{.}}

// A planned function. Op numbers: %a 0, %ta 1, %b 2, %tb 3, invoke 4,
// kill %a 5, %c 6, %tc 7, invoke 8, kill %b 9, %d 10, %td 11, invoke 12,
// kill %d 13, return 14; so %a lives [0, 5), %b [2, 9), %c [6, 15) (it is
// returned: an output), %d [10, 13). %a and %d are never written
// (constants). @sram uses 320 + 128 = 448 bytes; the lower bound is the
// peak of live bytes, %b + %c = 384. The pool's size, 512, is within twice
// the used bytes, so the axis goes to 512 at 64-byte steps: 420 px / 512 B
// = 0.8203125 px per byte, offset 0 at y = 544. The time axis spans [0, 15),
// 15 ops on the minimum 480 px: 32 px per op from x = 90.
// So %a is x 90, width 5 * 32 = 160, bottom 544, height 64 * 0.8203125 =
// 52.5; %b starts at x 90 + 2 * 32 = 154, bottom 544 - 64 * 0.82 = 491.5,
// height 210; %c x 282, bottom 281.5; %d x 410 on %a's bytes. Lines: used
// at y 544 - 448 * 0.82 = 176.5, lower bound at 229, size at 124. Names
// fit in every rect (a 10 px label needs 6 px per character plus 6 px of
// width and 13 px of height).
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
// CHECK:       <?xml version="1.0" encoding="UTF-8"?>
// CHECK-NEXT:  <svg xmlns="http://www.w3.org/2000/svg" width="760" height="{{[0-9]+}}" viewBox="0 0 760 {{[0-9]+}}">
// CHECK-NEXT:  <title>memplan memory map @tiny_net</title>
// CHECK:       <text x="90" y="94" class="head">@planned — @sram</text>
// CHECK-NEXT:  <text x="90" y="110" class="note">used 448 B, lower bound 384 B, 1.17x, size 512 B, 4 storages</text>
// CHECK-LABEL: <g class="panel" data-function="planned" data-pool="sram" data-x0="90" data-y0="544" data-t0="0" data-px-per-op="32.0" data-px-per-byte="0.8203125">
// CHECK:       <text x="84" y="547.5" class="tick" text-anchor="end">0 B</text>
// CHECK:       <text x="84" y="127.5" class="tick" text-anchor="end">512 B</text>
// CHECK:       <text x="90" y="560" class="tick" text-anchor="middle">0</text>
// CHECK:       <text x="538" y="560" class="tick" text-anchor="middle">14</text>
// CHECK:       <rect class="constant" x="90" y="491.5" width="160" height="52.5" data-name="a"><title>a (constant): 64 B, live [0, 5), offset 0 B, align 64</title></rect>
// CHECK-NEXT:  <rect class="activation" x="154" y="281.5" width="224" height="210" data-name="b"><title>b (activation): 256 B, live [2, 9), offset 64 B, align 64</title></rect>
// CHECK-NEXT:  <rect class="output" x="282" y="176.5" width="288" height="105" data-name="c"><title>c (output): 128 B, live [6, 15), offset 320 B, align 64</title></rect>
// CHECK-NEXT:  <rect class="constant" x="410" y="491.5" width="96" height="52.5" data-name="d"><title>d (constant): 64 B, live [10, 13), offset 0 B, align 64</title></rect>
// CHECK-NEXT:  <text class="label" x="170" y="521.25" text-anchor="middle">a</text>
// CHECK-NEXT:  <text class="label" x="266" y="390" text-anchor="middle">b</text>
// CHECK-NEXT:  <text class="label" x="426" y="232.5" text-anchor="middle">c</text>
// CHECK-NEXT:  <text class="label" x="458" y="521.25" text-anchor="middle">d</text>
// CHECK-NEXT:  <line class="used" x1="90" y1="176.5" x2="578" y2="176.5"/>
// CHECK-NEXT:  <line class="bound" x1="90" y1="229" x2="578" y2="229"/>
// CHECK-NEXT:  <line class="size" x1="90" y1="124" x2="578" y2="124"/>
// CHECK-NEXT:  <text x="582" y="128">pool size 512 B</text>
// CHECK-NEXT:  <text x="582" y="180.5">used 448 B</text>
// CHECK-NEXT:  <text x="582" y="233">lower bound 384 B</text>
// CHECK:       </g>
// CHECK-NEXT:  </svg>

// -----

// The same program without a plan: the storages are drawn stacked in order
// of their start, each in its own bytes (%a at 0, %b at 64, %c at 320, %d
// at 448), topped by the pseudo-pool's used bytes, the sum 512; the lower
// bound stays 384 (what planning could reach). A storage too small for its
// name (%tiny: 8 bytes; the axis goes to 640 at 128-byte steps, so 8 * 420
// / 640 = 5.25 px high) gets no label, only its tooltip; its rect is still
// drawn, stacked at 512. A dynamic-size storage is listed, not drawn.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @unplanned(%n: index) -> memref<16xf32> {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %b = memory.alloc_storage : !memory.storage<256>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<256> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  %c = memory.alloc_storage : !memory.storage<128>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
  memory.kill %b : !memory.storage<256>
  %d = memory.alloc_storage : !memory.storage<64>
  %td = memory.alloc_tensor %d[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%td : memref<16xf32>) outs(%tc : memref<16xf32>)
  memory.kill %d : !memory.storage<64>
  %tiny = memory.alloc_storage : !memory.storage<8>
  %dyn = memory.alloc_storage(%n) : !memory.storage<?>
  func.return %tc : memref<16xf32>
}
// CHECK:       <title>memplan memory map</title>
// CHECK:       class="head">@unplanned — (unplanned)</text>
// CHECK-NEXT:  class="note">used 520 B, lower bound 384 B, 1.35x, 5 storages, not planned: storages drawn stacked, each in its own bytes</text>
// CHECK-LABEL: <g class="panel" data-function="unplanned" data-pool="(unplanned)"
// CHECK:       data-name="a"><title>a (constant): 64 B, live [0, 5), not planned (drawn at 0 B), align 64</title></rect>
// CHECK-NEXT:  data-name="b"><title>b (activation): 256 B, live [2, 9), not planned (drawn at 64 B), align 64</title></rect>
// CHECK-NEXT:  data-name="c"><title>c (output): 128 B, live [6, 17), not planned (drawn at 320 B), align 64</title></rect>
// CHECK-NEXT:  data-name="d"><title>d (constant): 64 B, live [10, 13), not planned (drawn at 448 B), align 64</title></rect>
// CHECK-NEXT:  <rect class="constant" x="485.29" y="202.75" width="28.24" height="5.25" data-name="tiny"><title>tiny (constant): 8 B, live [14, 15), not planned (drawn at 512 B), align 64</title></rect>
// CHECK-NEXT:  <text class="label" {{.*}}>a</text>
// CHECK-NEXT:  <text class="label" {{.*}}>b</text>
// CHECK-NEXT:  <text class="label" {{.*}}>c</text>
// CHECK-NEXT:  <text class="label" {{.*}}>d</text>
// CHECK-NEXT:  <line class="used"
// CHECK-NEXT:  <line class="bound"
// CHECK-NEXT:  <text {{.*}}>used 520 B</text>
// CHECK-NEXT:  <text {{.*}}>lower bound 384 B</text>
// CHECK:       </g>
// CHECK-NEXT:  <text x="{{[0-9]+}}" y="{{[0-9.]+}}" class="note">@unplanned: 1 dynamic-size storage (sized at run time, not drawn): dyn</text>
// CHECK-NEXT:  </svg>

// -----

// No static storage at all: a note instead of a panel, and no <rect>.
func.func @empty() {
  func.return
}
// CHECK:       <title>memplan memory map</title>
// CHECK-NOT:   <rect
// CHECK:       class="note">@empty: no static storages to draw</text>
// CHECK-NEXT:  </svg>
// FILE:        <title>memplan memory map</title>
// FILE-NOT:    <rect
// FILE:        class="note">@empty: no static storages to draw</text>
// FILE-NEXT:   </svg>
