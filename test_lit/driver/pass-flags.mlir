// Each memplan pass is a flag. Flag passes run first, in command-line order,
// then the -p list; the order is visible here because lower-to-memref only
// lowers memory ops that already exist when it runs.
// One of the slowest files: run_tests.sh --quick leaves it out.
// UNSUPPORTED: quick
//
// manifest-alloc, then lower-to-memref: everything ends up as memref.
// RUN: memplan-opt %s --manifest-alloc --lower-to-memref | filecheck %s --check-prefix=LOWERED
// The other way round, lower-to-memref finds nothing to lower:
// RUN: memplan-opt %s --lower-to-memref --manifest-alloc | filecheck %s --check-prefix=PLANNED
// Flags run before the -p list, wherever they appear on the command line:
// RUN: memplan-opt %s -p lower-to-memref --manifest-alloc | filecheck %s --check-prefix=LOWERED
// RUN: memplan-opt -p lower-to-memref %s --manifest-alloc | filecheck %s --check-prefix=LOWERED
//
// A flag is the same pass as its -p element, options included:
// RUN: memplan-opt %s --manifest-alloc --lower-to-memref='pool-mode=global' > %t.flag
// RUN: memplan-opt %s -p 'manifest-alloc,lower-to-memref{pool-mode=global}' > %t.p
// RUN: diff %t.flag %t.p
// RUN: filecheck %s --input-file %t.flag --check-prefix=LOWERED
//
// insert-kills only kills memory values, so it must come after manifest-alloc:
// RUN: memplan-opt %s --manifest-alloc --insert-kills | filecheck %s --check-prefix=KILLS
// RUN: memplan-opt %s --insert-kills --manifest-alloc | filecheck %s --check-prefix=NOKILLS
//
// Flags mixed with a -p list: the flags run first, then the -p passes. The
// report of the -p list's plan-report sees the kills the flag inserted, and
// is the same as the one requested by a flag with the option syntax
// (`output` is a path, so it is quoted as in -p):
// RUN: memplan-opt %s -p 'insert-kills,plan-report{format=json output="%t.p.json"}' --manifest-alloc > /dev/null
// RUN: memplan-opt %s --manifest-alloc --insert-kills --plan-report='format=json output="%t.flag.json"' > /dev/null
// RUN: diff %t.p.json %t.flag.json
// RUN: filecheck %s --input-file %t.flag.json --check-prefix=JSON
// Position matters among flags: a report requested before --manifest-alloc
// sees no storage yet:
// RUN: memplan-opt %s --plan-report='format=json' --manifest-alloc 2>&1 > /dev/null | filecheck %s --check-prefix=EMPTY
//
// Flags must be spelled in full, and options must exist and have the right type:
// RUN: not memplan-opt %s --manifest 2>&1 | filecheck %s --check-prefix=ABBREV
// RUN: not memplan-opt %s --plan-rep 2>&1 | filecheck %s --check-prefix=ABBREV-PLAN
// RUN: not memplan-opt %s --plan-report=fromat=json 2>&1 | filecheck %s --check-prefix=UNKNOWN-OPTION
// Option values are written as in MLIR: bare up to the next space or `}`
// (a path, with directories), or quoted (a space inside).
// RUN: rm -rf %t.dir && mkdir -p %t.dir/out/dir
// RUN: memplan-opt %s --manifest-alloc --plan-report='format=json output=%t.dir/plan.json' > /dev/null
// RUN: memplan-opt %s --manifest-alloc --plan-report='format=json output=%t.dir/out/dir/plan.json' > /dev/null
// RUN: memplan-opt %s --manifest-alloc --plan-report='format=json output="%t.dir/a b.json"' > /dev/null
// RUN: memplan-opt %s -p 'manifest-alloc,plan-report{format=json output=%t.dir/p.json}' > /dev/null
// RUN: diff %t.dir/plan.json %t.dir/out/dir/plan.json
// RUN: diff %t.dir/plan.json "%t.dir/a b.json"
// RUN: diff %t.dir/plan.json %t.dir/p.json
// RUN: not memplan-opt %s --lower-to-memref=mode=arg 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not memplan-opt %s --lower-to-memref=pool-mode=bogus 2>&1 | filecheck %s --check-prefix=VALUE
// A pass that rejects its input (PassFailedException) gives its message:
// RUN: not memplan-opt %s --plan-report=format=xml 2>&1 | filecheck %s --check-prefix=PASS-FAILED
// Options go after '=', not in the next argument:
// RUN: not memplan-opt %s --lower-to-memref pool-mode=arg 2>&1 | filecheck %s --check-prefix=DETACHED
//
// --help lists each flag with its pass's summary (its text is the pass's own):
// RUN: memplan-opt --help | filecheck %s --check-prefix=HELP

// LOWERED-LABEL: func.func @net
// LOWERED-NOT:     memory.
// LOWERED:         func.call @relu
// LOWERED-NOT:     memory.

// PLANNED-LABEL: func.func @net
// PLANNED:         memory.alloc_storage
// PLANNED:         memory.invoke @relu

// KILLS-LABEL: func.func @net
// KILLS:         memory.invoke @relu ins(%y : memref<16xf32>)
// KILLS-NEXT:    memory.kill %y : memref<16xf32>
// KILLS-NEXT:    memory.kill %y_storage : !memory.storage<64>
// NOKILLS-LABEL: func.func @net
// NOKILLS-NOT:   memory.kill

// The kill of %y_storage right after its last use ends its lifetime at op 7,
// while %z_storage escapes (returned) and lives to the end.
// JSON:      "name": "net"
// JSON:      {"name": "y_storage", "size": 64, "alignment": 64, "start": 0, "end": 7,
// JSON-SAME:   "escapes": false
// JSON:      {"name": "z_storage", "size": 64, "alignment": 64, "start": 3, "end": 9,
// JSON-SAME:   "escapes": true

// EMPTY:      "functions": [
// EMPTY-NOT:  "name": "y_storage"

// ABBREV:   memplan-opt: error: abbreviated pass flag --manifest; write --manifest-alloc in full
// ABBREV-PLAN: memplan-opt: error: abbreviated pass flag --plan-rep; write --plan-report in full
// UNKNOWN-OPTION: memplan-opt: error: in --plan-report=fromat=json: plan-report: unknown option 'fromat' (did you mean 'format'?)
// OPTION:   memplan-opt: error: in --lower-to-memref=mode=arg: lower-to-memref: unknown option 'mode' (did you mean 'pool-mode'?)
// VALUE:    memplan-opt: error: in --lower-to-memref=pool-mode=bogus: lower-to-memref: pool-mode must be one of alloc, arg, global (got 'bogus')
// PASS-FAILED: memplan-opt: error: in --plan-report=format=xml: plan-report: format must be one of text, json, svg, trace, c-header (got 'xml')
// PASS-FAILED-NOT: Traceback
// DETACHED: memplan-opt: error: options of --lower-to-memref must be attached with '=': write --lower-to-memref='pool-mode=arg'

// HELP:      memplan passes:
// HELP:      --manifest-alloc {{ +[A-Z]}}
// HELP:      --lower-to-memref {{ +[A-Z]}}

func.func private @relu(tensor<16xf32>) -> tensor<16xf32>
func.func @net(%x: tensor<16xf32>) -> tensor<16xf32> {
  %y = func.call @relu(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %z = func.call @relu(%y) : (tensor<16xf32>) -> tensor<16xf32>
  func.return %z : tensor<16xf32>
}
