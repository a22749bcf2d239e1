// Command-line mistakes are one-line diagnostics with exit code 1.

// An unknown pass, with a suggestion when one is close:
// RUN: not memplan-opt %s -p nope 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN:     memplan-opt: error: in -p 'nope': unknown pass 'nope'
// RUN: not memplan-opt %s -p 'dce,canonicalise' 2>&1 | filecheck %s --check-prefix=SUGGEST
// SUGGEST:     memplan-opt: error: in -p 'dce,canonicalise': unknown pass 'canonicalise' (did you mean 'canonicalize'?)

// An option the pass does not have, and an option of the wrong type:
// RUN: not memplan-opt %s -p 'memref-streamify{stream=2}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION:      memplan-opt: error: in -p 'memref-streamify{stream=2}': memref-streamify: unknown option 'stream' (did you mean 'streams'?)
// RUN: not memplan-opt %s -p 'memref-streamify{streams=many}' 2>&1 | filecheck %s --check-prefix=TYPE
// TYPE:        memplan-opt: error: in -p 'memref-streamify{streams=many}': memref-streamify: streams must be an integer (got 'many')

// A malformed pipeline points at the column:
// RUN: not memplan-opt %s -p 'dce{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX:      memplan-opt: error: in -p 'dce{': malformed pass pipeline at column 5: expected argument name here
// SYNTAX-NEXT: dce{
// SYNTAX-NEXT: {{^    \^$}}

// Unknown flags, and abbreviated ones (no option may be abbreviated):
// RUN: not memplan-opt %s --frobnicate 2>&1 | filecheck %s --check-prefix=FLAG
// FLAG:        memplan-opt: error: unrecognized arguments: --frobnicate (see memplan-opt --help)
// RUN: not memplan-opt %s --split-input 2>&1 | filecheck %s --check-prefix=ABBREV
// ABBREV:      memplan-opt: error: unrecognized arguments: --split-input; did you mean --split-input-file? (see memplan-opt --help)

// A missing or unreadable input file:
// RUN: not memplan-opt %s.missing 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING:     memplan-opt: error: cannot read input file '{{.*}}command-line.mlir.missing': No such file or directory
// RUN: not memplan-opt %S 2>&1 | filecheck %s --check-prefix=DIR
// DIR:         memplan-opt: error: cannot read input file '{{.*}}driver': Is a directory

// No diagnostic is a Python traceback:
// RUN: not memplan-opt %s -p nope 2>&1 | filecheck %s --check-prefix=NOTRACE
// RUN: not memplan-opt %s.missing 2>&1 | filecheck %s --check-prefix=NOTRACE
// NOTRACE-NOT: Traceback

func.func @f() {
  func.return
}
