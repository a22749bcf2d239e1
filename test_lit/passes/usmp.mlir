// RUN: memplan-opt %s --usmp --verify-plan --split-input-file | filecheck %s
// Idempotence: planning a planned module again changes nothing.
// RUN: memplan-opt %s --usmp --split-input-file | memplan-opt --usmp --verify-plan --split-input-file | filecheck %s
// Composition: the COMPOSE lines hold for usmp alone and with `coalesce`
// first (either mode).
// RUN: memplan-opt %s --usmp --verify-plan --split-input-file | filecheck %s --check-prefix=COMPOSE
// RUN: memplan-opt %s --coalesce --usmp --verify-plan --split-input-file | filecheck %s --check-prefix=COMPOSE
// RUN: memplan-opt %s --coalesce=overlap=false --usmp --verify-plan --split-input-file | filecheck %s --check-prefix=COMPOSE

// No memory.pool: one unbounded @workspace_cpu is created at the top of the
// module. %a and %b are live together (%a is killed after %b's invoke), so
// they take two 64-byte slots; %c is allocated after %a's kill and reuses
// %a's slot at 64. used 128 = the peak of live bytes (two 64-byte storages).
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @chain(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  %b = memory.alloc_storage : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  %c = memory.alloc_storage : !memory.storage<64>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
  memory.kill %b : !memory.storage<64>
  memory.invoke @k ins(%tc : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %c : !memory.storage<64>
  func.return
}
// CHECK:       builtin.module {
// CHECK-NEXT:    memory.pool @workspace_cpu targets ["cpu"] used 128
// CHECK-LABEL: func.func @chain
// CHECK:         %a = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>
// CHECK:         %b = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>
// CHECK:         %c = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>

// -----

// One default pool per device, in order of first use (npu first here), each
// with `targets` its device. Both storages sit at 0 of their own pool. The
// dynamic-size %d cannot be planned statically and is left as it is.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @devices(%x: memref<16xf32>, %n: index) {
  %a = memory.alloc_storage on "npu" : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  %b = memory.alloc_storage : !memory.storage<64>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %b : !memory.storage<64>
  %d = memory.alloc_storage(%n) : !memory.storage<?>
  memory.kill %d : !memory.storage<?>
  func.return
}
// CHECK:       builtin.module {
// CHECK-NEXT:    memory.pool @workspace_npu targets ["npu"] used 64
// CHECK-NEXT:    memory.pool @workspace_cpu targets ["cpu"] used 64
// CHECK-LABEL: func.func @devices
// CHECK:         %a = memory.alloc_storage on "npu" at @workspace_npu[0] : !memory.storage<64>
// CHECK:         %b = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>
// CHECK:         %d = memory.alloc_storage(%n) : !memory.storage<?>

// -----

// Candidates without `pools`: the pools whose targets include the device,
// in module order. cpu storages try @dtcm (128 bytes) first: %a and %b fill
// it, %c (live with both) falls back to @sram. The npu storage %n cannot use
// @dtcm (targets ["cpu"]) and goes to @sram, above %c.
memory.pool @dtcm size 128 targets ["cpu"]
memory.pool @sram targets ["cpu", "npu"]
func.func private @k3(memref<16xf32>, memref<16xf32>, memref<16xf32>)
func.func @fallback() {
  %a = memory.alloc_storage : !memory.storage<64>
  %b = memory.alloc_storage : !memory.storage<64>
  %c = memory.alloc_storage : !memory.storage<64>
  %n = memory.alloc_storage on "npu" : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<64> -> memref<16xf32>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<64> -> memref<16xf32>
  %tn = memory.alloc_tensor %n[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k3 ins(%ta, %tb : memref<16xf32>, memref<16xf32>) outs(%tc : memref<16xf32>)
  memory.invoke @k3 ins(%ta, %tb : memref<16xf32>, memref<16xf32>) outs(%tn : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  memory.kill %b : !memory.storage<64>
  memory.kill %c : !memory.storage<64>
  memory.kill %n : !memory.storage<64>
  func.return
}
// CHECK:         memory.pool @dtcm size 128 targets ["cpu"] used 128
// CHECK-NEXT:    memory.pool @sram targets ["cpu", "npu"] used 128
// CHECK-LABEL: func.func @fallback
// CHECK-NEXT:    %a = memory.alloc_storage at @dtcm[0] : !memory.storage<64>
// CHECK-NEXT:    %b = memory.alloc_storage at @dtcm[64] : !memory.storage<64>
// CHECK-NEXT:    %c = memory.alloc_storage at @sram[0] : !memory.storage<64>
// CHECK-NEXT:    %n = memory.alloc_storage on "npu" at @sram[64] : !memory.storage<64>

// -----

// `pools [...]` gives the candidates and their priority, whatever the module
// order: %a prefers @sram, %b may only use @dtcm. Not live together, both
// sit at 0. @big is nobody's candidate: used 0.
memory.pool @dtcm size 256
memory.pool @sram size 256
memory.pool @big
func.func @explicit() {
  %a = memory.alloc_storage pools [@sram, @dtcm] : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  %b = memory.alloc_storage pools [@dtcm] : !memory.storage<64>
  memory.kill %b : !memory.storage<64>
  func.return
}
// CHECK:         memory.pool @dtcm size 256 used 64
// CHECK-NEXT:    memory.pool @sram size 256 used 64
// CHECK-NEXT:    memory.pool @big used 0
// CHECK-LABEL: func.func @explicit
// CHECK-NEXT:    %a = memory.alloc_storage pools [@sram, @dtcm] at @sram[0] : !memory.storage<64>
// CHECK:         %b = memory.alloc_storage pools [@dtcm] at @dtcm[0] : !memory.storage<64>

// -----

// Read-only pools take only storages that are never written: %w is only
// read (`ins`), so it may use @flash, the first pool in module order; %a is
// written (`outs`) and skips @flash for @sram.
memory.pool @flash access ro
memory.pool @sram
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @read_only(%x: memref<16xf32>) {
  %w = memory.alloc_storage : !memory.storage<64>
  %tw = memory.alloc_tensor %w[0] : !memory.storage<64> -> memref<16xf32>
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%tw : memref<16xf32>) outs(%ta : memref<16xf32>)
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %w : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  func.return
}
// CHECK:         memory.pool @flash access ro used 64
// CHECK-NEXT:    memory.pool @sram used 64
// CHECK-LABEL: func.func @read_only
// CHECK-NEXT:    %w = memory.alloc_storage at @flash[0] : !memory.storage<64>
// CHECK:         %a = memory.alloc_storage at @sram[0] : !memory.storage<64>

// -----

// Functions are planned one by one and share the workspace (the USMP RFC's
// U2): both start at offset 0 and the pool's used is the larger function's,
// max(64, 256 + 128) = 384, not the sum.
memory.pool @sram size 1024
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @small(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<64>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  memory.kill %a : !memory.storage<64>
  func.return
}
func.func @large(%x: memref<16xf32>) {
  %a = memory.alloc_storage : !memory.storage<256>
  %b = memory.alloc_storage : !memory.storage<128>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<256> -> memref<16xf32>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %a : !memory.storage<256>
  memory.kill %b : !memory.storage<128>
  func.return
}
// CHECK:         memory.pool @sram size 1024 used 384
// CHECK-LABEL: func.func @small
// CHECK-NEXT:    %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
// CHECK-LABEL: func.func @large
// CHECK-NEXT:    %a = memory.alloc_storage at @sram[0] : !memory.storage<256>
// CHECK-NEXT:    %b = memory.alloc_storage at @sram[256] : !memory.storage<128>

// -----

// A callee runs while its caller's storages are live: the two functions are
// planned together even in the default per-function scope, so @callee's %t
// goes above @caller's %keep (128 bytes) instead of sharing offset 0.
memory.pool @sram
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @callee(%x: memref<16xf32>) {
  %t = memory.alloc_storage : !memory.storage<64>
  %tt = memory.alloc_tensor %t[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%tt : memref<16xf32>)
  memory.kill %t : !memory.storage<64>
  func.return
}
func.func @caller(%x: memref<16xf32>) {
  %keep = memory.alloc_storage : !memory.storage<128>
  %tk = memory.alloc_tensor %keep[0] : !memory.storage<128> -> memref<16xf32>
  func.call @callee(%tk) : (memref<16xf32>) -> ()
  memory.kill %keep : !memory.storage<128>
  func.return
}
// CHECK:         memory.pool @sram used 192
// CHECK-LABEL: func.func @callee
// CHECK-NEXT:    %t = memory.alloc_storage at @sram[128] : !memory.storage<64>
// CHECK-LABEL: func.func @caller
// CHECK-NEXT:    %keep = memory.alloc_storage at @sram[0] : !memory.storage<128>

// -----

// An already pinned storage stays where it is (@sram[64]) and the others
// are planned around it: %a (live with %p) takes [0, 64), %b (live with
// both) the 128 bytes above %p. used 256 = the pool's size.
memory.pool @sram size 256
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @pinned() {
  %p = memory.alloc_storage at @sram[64] : !memory.storage<64>
  %a = memory.alloc_storage : !memory.storage<64>
  %b = memory.alloc_storage : !memory.storage<128>
  %tp = memory.alloc_tensor %p[0] : !memory.storage<64> -> memref<16xf32>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<64> -> memref<16xf32>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%tp : memref<16xf32>) outs(%ta : memref<16xf32>)
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %p : !memory.storage<64>
  memory.kill %a : !memory.storage<64>
  memory.kill %b : !memory.storage<128>
  func.return
}
// CHECK:         memory.pool @sram size 256 used 256
// CHECK-LABEL: func.func @pinned
// CHECK-NEXT:    %p = memory.alloc_storage at @sram[64] : !memory.storage<64>
// CHECK-NEXT:    %a = memory.alloc_storage at @sram[0] : !memory.storage<64>
// CHECK-NEXT:    %b = memory.alloc_storage at @sram[128] : !memory.storage<128>

// -----

// Storages in the two branches of one scf.if never conflict: %s and %t
// share offset 0; %o, live across the scf.if, sits above the larger branch
// (128). used 160 = 32 + max(64, 128).
func.func @branches(%c: i1) {
  %o = memory.alloc_storage : !memory.storage<32>
  scf.if %c {
    %s = memory.alloc_storage : !memory.storage<64>
    memory.kill %s : !memory.storage<64>
    scf.yield
  } else {
    %t = memory.alloc_storage : !memory.storage<128>
    memory.kill %t : !memory.storage<128>
    scf.yield
  }
  memory.kill %o : !memory.storage<32>
  func.return
}
// CHECK:         memory.pool @workspace_cpu targets ["cpu"] used 160
// CHECK-LABEL: func.func @branches
// CHECK-NEXT:    %o = memory.alloc_storage at @workspace_cpu[128] : !memory.storage<32>
// CHECK:         %s = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>
// CHECK:         %t = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<128>

// -----

// Offsets are multiples of both the storage's and the pool's alignment:
// %b (align 128) at 0; %a (align 16 in a pool aligned to 32) at 32, the
// first multiple of 32 above %b's 8 bytes; %c at 96, the first multiple of
// 32 above %a's end (72).
memory.pool @sram align 32
func.func @alignment() {
  %a = memory.alloc_storage align 16 : !memory.storage<40>
  %b = memory.alloc_storage align 128 : !memory.storage<8>
  %c = memory.alloc_storage align 16 : !memory.storage<8>
  memory.kill %a : !memory.storage<40>
  memory.kill %b : !memory.storage<8>
  memory.kill %c : !memory.storage<8>
  func.return
}
// CHECK:         memory.pool @sram align 32 used 104
// CHECK-LABEL: func.func @alignment
// CHECK-NEXT:    %a = memory.alloc_storage align 16 at @sram[32] : !memory.storage<40>
// CHECK-NEXT:    %b = memory.alloc_storage align 128 at @sram[0] : !memory.storage<8>
// CHECK-NEXT:    %c = memory.alloc_storage align 16 at @sram[96] : !memory.storage<8>

// -----

// A storage holding several tensors (as `coalesce` leaves it, here laid end
// to end: 192 bytes) is planned split too: one storage per tensor, created
// right before its tensor and killed after its last use. Split, %ta and %tc
// share bytes (never live together): 128 bytes instead of 192, so the split
// form is written.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @split(%x: memref<16xf32>) {
  %region = memory.alloc_storage : !memory.storage<192>
  %ta = memory.alloc_tensor %region[0] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  %tb = memory.alloc_tensor %region[64] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %ta : memref<16xf32>
  %tc = memory.alloc_tensor %region[128] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
  memory.kill %tb : memref<16xf32>
  memory.invoke @k ins(%tc : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %tc : memref<16xf32>
  memory.kill %region : !memory.storage<192>
  func.return
}
// CHECK:         memory.pool @workspace_cpu targets ["cpu"] used 128
// CHECK-LABEL: func.func @split
// CHECK-NEXT:    %ta_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>
// CHECK-NEXT:    %ta = memory.alloc_tensor %ta_storage[0] : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
// CHECK-NEXT:    %tb_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>
// CHECK-NEXT:    %tb = memory.alloc_tensor %tb_storage[0] : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
// CHECK-NEXT:    memory.kill %ta : memref<16xf32>
// CHECK-NEXT:    memory.kill %ta_storage : !memory.storage<64>
// CHECK-NEXT:    %tc_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>
// CHECK-NEXT:    %tc = memory.alloc_tensor %tc_storage[0] : !memory.storage<64> -> memref<16xf32>
// CHECK-NEXT:    memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
// CHECK-NEXT:    memory.kill %tb : memref<16xf32>
// CHECK-NEXT:    memory.kill %tb_storage : !memory.storage<64>
// CHECK-NEXT:    memory.invoke @k ins(%tc : memref<16xf32>) outs(%x : memref<16xf32>)
// CHECK-NEXT:    memory.kill %tc : memref<16xf32>
// CHECK-NEXT:    memory.kill %tc_storage : !memory.storage<64>
// CHECK-NEXT:    func.return

// -----

// The same tensors already packed into 128 bytes (%tc reuses %ta's bytes):
// splitting would not use less, so the storage is kept whole and pinned.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func @kept_whole(%x: memref<16xf32>) {
  %region = memory.alloc_storage : !memory.storage<128>
  %ta = memory.alloc_tensor %region[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  %tb = memory.alloc_tensor %region[64] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %ta : memref<16xf32>
  %tc = memory.alloc_tensor %region[0] : !memory.storage<128> -> memref<16xf32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
  memory.kill %tb : memref<16xf32>
  memory.invoke @k ins(%tc : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %tc : memref<16xf32>
  memory.kill %region : !memory.storage<128>
  func.return
}
// CHECK:         memory.pool @workspace_cpu targets ["cpu"] used 128
// CHECK-LABEL: func.func @kept_whole
// CHECK-NEXT:    %region = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<128>
// CHECK-NEXT:    %ta = memory.alloc_tensor %region[0] : !memory.storage<128> -> memref<16xf32>
// CHECK:         %tc = memory.alloc_tensor %region[0] : !memory.storage<128> -> memref<16xf32>
// CHECK:         memory.kill %region : !memory.storage<128>

// -----

// The split is chosen pool by pool (pools no storage can choose between are
// planned independently): splitting %region pays off in @workspace_cpu
// (128 instead of 192), but %n's two tensors are live together, and split
// they would cost pool alignment padding (%n1 at 50 is only 2-aligned and
// would move to 64 in the 16-aligned pool: 114 instead of 100), so %n stays
// whole in @workspace_npu.
func.func private @k(memref<16xf32>, memref<16xf32>)
func.func private @k2(memref<50xi8>, memref<50xi8>)
func.func @per_pool(%x: memref<16xf32>) {
  %region = memory.alloc_storage : !memory.storage<192>
  %ta = memory.alloc_tensor %region[0] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%x : memref<16xf32>) outs(%ta : memref<16xf32>)
  %tb = memory.alloc_tensor %region[64] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%ta : memref<16xf32>) outs(%tb : memref<16xf32>)
  memory.kill %ta : memref<16xf32>
  %tc = memory.alloc_tensor %region[128] : !memory.storage<192> -> memref<16xf32>
  memory.invoke @k ins(%tb : memref<16xf32>) outs(%tc : memref<16xf32>)
  memory.kill %tb : memref<16xf32>
  memory.invoke @k ins(%tc : memref<16xf32>) outs(%x : memref<16xf32>)
  memory.kill %tc : memref<16xf32>
  memory.kill %region : !memory.storage<192>
  %n = memory.alloc_storage on "npu" : !memory.storage<100>
  %n0 = memory.alloc_tensor %n[0] : !memory.storage<100> -> memref<50xi8>
  %n1 = memory.alloc_tensor %n[50] : !memory.storage<100> -> memref<50xi8>
  memory.invoke @k2 outs(%n0, %n1 : memref<50xi8>, memref<50xi8>)
  memory.kill %n : !memory.storage<100>
  func.return
}
// CHECK:         memory.pool @workspace_cpu targets ["cpu"] used 128
// CHECK-NEXT:    memory.pool @workspace_npu targets ["npu"] used 100
// CHECK-LABEL: func.func @per_pool
// CHECK-NEXT:    %ta_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>
// CHECK:         %tb_storage = memory.alloc_storage at @workspace_cpu[0] : !memory.storage<64>
// CHECK:         %tc_storage = memory.alloc_storage at @workspace_cpu[64] : !memory.storage<64>
// CHECK:         %n = memory.alloc_storage on "npu" at @workspace_npu[0] : !memory.storage<100>
// CHECK-NEXT:    %n0 = memory.alloc_tensor %n[0] : !memory.storage<100> -> memref<50xi8>
// CHECK-NEXT:    %n1 = memory.alloc_tensor %n[50] : !memory.storage<100> -> memref<50xi8>

// -----

// Mixed alignments, with or without `coalesce` first: 344 bytes. %p (64
// bytes) is live across the scf.if; in it %a (256 bytes, align 128) and %b
// (24 bytes, align 64) are live together. usmp alone: %a at 0, %p at 256,
// %b at 320 (a multiple of 64). `coalesce` merges %a and %b into one
// 128-aligned storage with %tb at 256, a multiple of 128, so %tb records
// `align 64`; usmp splits the merged storage with %tb's storage 64-aligned
// and places it at 320 as above (aligned to 128 it would go to 384, after
// %p: 408 bytes).
memory.pool @mixed
func.func private @k(memref<16xi8>, memref<16xi8>)
func.func @mixed_alignments_composition(%c: i1, %x: memref<16xi8>) {
  %p = memory.alloc_storage : !memory.storage<64>
  %tp = memory.alloc_tensor %p[0] : !memory.storage<64> -> memref<64xi8>
  memory.invoke @k ins(%x : memref<16xi8>) outs(%tp : memref<64xi8>)
  scf.if %c {
    %a = memory.alloc_storage align 128 : !memory.storage<256>
    %ta = memory.alloc_tensor %a[0] : !memory.storage<256> -> memref<256xi8>
    memory.invoke @k ins(%tp : memref<64xi8>) outs(%ta : memref<256xi8>)
    %b = memory.alloc_storage : !memory.storage<24>
    %tb = memory.alloc_tensor %b[0] : !memory.storage<24> -> memref<24xi8>
    memory.invoke @k ins(%ta : memref<256xi8>) outs(%tb : memref<24xi8>)
    memory.kill %a : !memory.storage<256>
    memory.invoke @k ins(%tb : memref<24xi8>) outs(%x : memref<16xi8>)
    memory.kill %b : !memory.storage<24>
  }
  memory.invoke @k ins(%tp : memref<64xi8>) outs(%x : memref<16xi8>)
  memory.kill %p : !memory.storage<64>
  func.return
}
// CHECK-LABEL: func.func @mixed_alignments_composition
// CHECK-NEXT:    %p = memory.alloc_storage at @mixed[256] : !memory.storage<64>
// CHECK:           %a = memory.alloc_storage align 128 at @mixed[0] : !memory.storage<256>
// CHECK:           %b = memory.alloc_storage at @mixed[320] : !memory.storage<24>
// COMPOSE:       memory.pool @mixed used 344
// COMPOSE-LABEL: func.func @mixed_alignments_composition
// COMPOSE-NEXT:    %p = memory.alloc_storage at @mixed[256] : !memory.storage<64>
// COMPOSE:           = memory.alloc_storage align 128 at @mixed[0] : !memory.storage<256>
// COMPOSE-NEXT:      %ta = memory.alloc_tensor %{{[a-z_]+}}[0] : !memory.storage<256> -> memref<256xi8>
// COMPOSE:           = memory.alloc_storage at @mixed[320] : !memory.storage<24>
// COMPOSE-NEXT:      %tb = memory.alloc_tensor %{{[a-z_]+}}[0] : !memory.storage<24> -> memref<24xi8>

// -----

// Fallback only when a storage does not fit: all five storages fit @sram
// (576 bytes are live while %a is, exactly its size), so none goes to
// @slow. Largest first (the greedy plan) puts %b and %a at 256 above %d and
// stacks %e at 448, leaving %c (live with %d, %e and %b) no 64-byte gap, so
// %c would fall back to @slow. The search packs %e at 256 under %a (384),
// %b reuses %e's bytes after %e's kill (256..448), and %c sits on %b at
// 448, where %a was before its kill.
memory.pool @sram size 576 align 64
memory.pool @slow align 64
func.func private @k1(memref<48xf32>, memref<64xf32>)
func.func private @k2(memref<16xf32>, memref<32xf32>)
func.func private @k3(memref<48xf32>, memref<16xf32>)
func.func private @k4(memref<48xf32>, memref<64xf32>)
func.func @fits_first_pool() {
  %d = memory.alloc_storage : !memory.storage<256>
  %td = memory.alloc_tensor %d[0] : !memory.storage<256> -> memref<64xf32>
  %e = memory.alloc_storage : !memory.storage<128>
  %te = memory.alloc_tensor %e[0] : !memory.storage<128> -> memref<32xf32>
  %a = memory.alloc_storage : !memory.storage<192>
  %ta = memory.alloc_tensor %a[0] : !memory.storage<192> -> memref<48xf32>
  memory.invoke @k1 ins(%ta : memref<48xf32>) outs(%td : memref<64xf32>)
  memory.kill %a : !memory.storage<192>
  %c = memory.alloc_storage : !memory.storage<64>
  %tc = memory.alloc_tensor %c[0] : !memory.storage<64> -> memref<16xf32>
  memory.invoke @k2 ins(%tc : memref<16xf32>) outs(%te : memref<32xf32>)
  memory.kill %e : !memory.storage<128>
  %b = memory.alloc_storage : !memory.storage<192>
  %tb = memory.alloc_tensor %b[0] : !memory.storage<192> -> memref<48xf32>
  memory.invoke @k3 ins(%tb : memref<48xf32>) outs(%tc : memref<16xf32>)
  memory.kill %c : !memory.storage<64>
  memory.invoke @k4 ins(%tb : memref<48xf32>) outs(%td : memref<64xf32>)
  memory.kill %b : !memory.storage<192>
  memory.kill %d : !memory.storage<256>
  func.return
}
// CHECK:         memory.pool @sram size 576 align 64 used 576
// CHECK-NEXT:    memory.pool @slow align 64 used 0
// CHECK-LABEL: func.func @fits_first_pool
// CHECK-NEXT:    %d = memory.alloc_storage at @sram[0] : !memory.storage<256>
// CHECK:         %e = memory.alloc_storage at @sram[256] : !memory.storage<128>
// CHECK:         %a = memory.alloc_storage at @sram[384] : !memory.storage<192>
// CHECK:         %c = memory.alloc_storage at @sram[448] : !memory.storage<64>
// CHECK:         %b = memory.alloc_storage at @sram[256] : !memory.storage<192>
