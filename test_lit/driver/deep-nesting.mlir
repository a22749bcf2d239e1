// Input nested more deeply than the parser can recurse is a diagnostic, not
// a RecursionError traceback. The input is 5000 nested "test.op" regions.
// RUN: %python -c "q = chr(34); nl = chr(10); n = 5000; print((q + 'test.op' + q + '() ({' + nl) * n + ('}) : () -> ()' + nl) * n)" > %t.mlir
// RUN: not memplan-opt %t.mlir 2>&1 | filecheck %s
// CHECK-NOT: Traceback
// CHECK:     memplan-opt: error: input nested too deeply
// CHECK-NOT: RecursionError
