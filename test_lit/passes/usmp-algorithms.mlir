// Every algorithm name is accepted and gives a valid plan. The module below
// is tight: @sram (384 bytes) equals the peak of live bytes (at op 4, %d,
// %f and %a: 192 + 64 + 128), and a plan exists, but greedy-by-size (largest
// first) leaves %c without a gap (usmp-invalid.mlir checks that message).
// RUN: memplan-opt %s --usmp=algorithm=auto --verify-plan | filecheck %s --check-prefixes=CHECK,SEARCH
// RUN: memplan-opt %s --usmp=algorithm=exact --verify-plan | filecheck %s --check-prefixes=CHECK,SEARCH
// RUN: memplan-opt %s --usmp=algorithm=greedy-by-conflicts --verify-plan | filecheck %s --check-prefixes=CHECK,SEARCH
// RUN: memplan-opt %s --usmp='algorithm=hill-climb seed=3' --verify-plan | filecheck %s --check-prefixes=CHECK,CLIMB
// RUN: memplan-opt %s -p 'usmp{algorithm=auto timeout=10 scope=function seed=0}' | filecheck %s --check-prefixes=CHECK,SEARCH

// auto and exact reach the bound with the same plan as greedy-by-conflicts
// (auto's first heuristic that fits): %b, then %a and %e reuse offset 0
// over time; %d sits at 192 above %f (at 128); %c takes %d's place after
// %d's kill. hill-climb finds another plan with the same 384 bytes.
memory.pool @sram size 384
func.func @tight() {
  %b = memory.alloc_storage : !memory.storage<128>
  memory.kill %b : !memory.storage<128>
  %d = memory.alloc_storage : !memory.storage<192>
  %f = memory.alloc_storage : !memory.storage<64>
  %a = memory.alloc_storage : !memory.storage<128>
  memory.kill %d : !memory.storage<192>
  %c = memory.alloc_storage : !memory.storage<64>
  memory.kill %f : !memory.storage<64>
  memory.kill %a : !memory.storage<128>
  %e = memory.alloc_storage : !memory.storage<192>
  memory.kill %c : !memory.storage<64>
  memory.kill %e : !memory.storage<192>
  func.return
}
// CHECK:         memory.pool @sram size 384 used 384
// CHECK-LABEL: func.func @tight
// SEARCH-NEXT:   %b = memory.alloc_storage at @sram[0] : !memory.storage<128>
// SEARCH:        %d = memory.alloc_storage at @sram[192] : !memory.storage<192>
// SEARCH-NEXT:   %f = memory.alloc_storage at @sram[128] : !memory.storage<64>
// SEARCH-NEXT:   %a = memory.alloc_storage at @sram[0] : !memory.storage<128>
// SEARCH:        %c = memory.alloc_storage at @sram[192] : !memory.storage<64>
// SEARCH:        %e = memory.alloc_storage at @sram[0] : !memory.storage<192>
// CLIMB-COUNT-6: memory.alloc_storage at @sram[{{[0-9]+}}]
