// RUN: not memplan-opt %s --split-input-file --plan-report='format=bogus' 2>&1 | filecheck %s --check-prefix=FORMAT
// RUN: not memplan-opt %s --split-input-file --plan-report='output="%t.missing/report.txt"' 2>&1 | filecheck %s --check-prefix=OUTPUT
// RUN: not memplan-opt %s --split-input-file --plan-report 2>&1 | filecheck %s --check-prefix=RECURSIVE

// An unknown format names the ones there are; an output file that cannot be
// written is a diagnostic, not a traceback. Both are given before any chunk
// is planned: nothing else is reported.
func.func @simple() {
  %s = memory.alloc_storage : !memory.storage<64>
  func.return
}
// FORMAT: memplan-opt: error: in --plan-report=format=bogus: plan-report: format must be one of text, json, svg, trace, c-header (got 'bogus')
// FORMAT-NOT: error
// OUTPUT: memplan-opt: error: plan-report: cannot write '{{.*}}.missing/report.txt': No such file or directory
// OUTPUT-NOT: error

// -----

// A function that calls itself and allocates storages cannot be planned
// statically (each activation needs its own bytes): the lifetime analysis
// refuses it, naming the function.
func.func @recursive(%n: i1) {
  %s = memory.alloc_storage : !memory.storage<64>
  scf.if %n {
    func.call @recursive(%n) : (i1) -> ()
  }
  func.return
}
// RECURSIVE: error: @recursive calls itself (directly or not) and allocates storages: recursive functions cannot be planned statically
