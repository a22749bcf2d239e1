// RUN: rm -rf %t && mkdir %t && echo keep > %t/report.json
// RUN: not memplan-opt %s -p 'manifest-alloc,plan-report{format=json output=%t/report.json},verify-plan{require-pinned=true}' 2>&1 | filecheck %s --check-prefix=LATER
// RUN: filecheck %s --input-file %t/report.json --check-prefix=KEPT
// RUN: ls -a %t | filecheck %s --check-prefix=LS
// RUN: memplan-opt %s -p 'plan,plan-report{format=json output=%t/report.json}' > /dev/null
// RUN: filecheck %s --input-file %t/report.json --check-prefix=WRITTEN
// RUN: cp %s %t/input.mlir
// RUN: not memplan-opt %t/input.mlir --plan --plan-report=output=%t/input.mlir 2>&1 | filecheck %s --check-prefix=SAME
// RUN: diff %s %t/input.mlir

// `plan-report{output=F}` writes F only when the whole pipeline succeeds:
// a later pass that fails (here verify-plan, the storages being unpinned)
// leaves F as it was, and no temporary file beside it. When every pass
// succeeds F holds the report. An `output=` that is the input file is
// refused before any pass runs, and the program is left as it was.
func.func private @k(tensor<16xf32>) -> tensor<16xf32>
func.func @main(%x: tensor<16xf32>) -> tensor<16xf32> {
  %a = func.call @k(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %b = func.call @k(%a) : (tensor<16xf32>) -> tensor<16xf32>
  func.return %b : tensor<16xf32>
}
// LATER: error: verify-plan: 2 problems:
// KEPT: keep
// KEPT-NOT: functions
// LS-NOT: .report.json.
// WRITTEN: "name": "main"
// SAME: memplan-opt: error: plan-report: output '{{.*}}input.mlir' is the input file; the report would overwrite the program
