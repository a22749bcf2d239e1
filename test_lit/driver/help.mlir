// RUN: memplan-opt --help | filecheck %s
// RUN: memplan-opt --version | filecheck %s --check-prefix=VERSION

// --help has the memplan passes group (one --<pass> flag per registered
// memplan pass, checked in the pass-specific tests) and lists upstream passes
// under -p only.
// CHECK:       usage: memplan-opt
// CHECK:       -p PASSES, --passes PASSES
// CHECK:       --debug
// CHECK:       memplan passes:
// CHECK-NEXT:    Each flag runs one memplan pass. Flag passes run first, in command-line
// CHECK-NOT:   --canonicalize

// VERSION:     memplan-opt {{[0-9][^ ]*}} (xdsl 0.74.{{[0-9]+}})
