// Each memplan pass is a flag. Flag passes run first, in command-line order,
// then the -p list; the order is visible here because lower-to-memref only
// lowers memory ops that already exist when it runs.
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
// Flags must be spelled in full, and options must exist and have the right type:
// RUN: not memplan-opt %s --manifest 2>&1 | filecheck %s --check-prefix=ABBREV
// RUN: not memplan-opt %s --lower-to-memref=mode=arg 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not memplan-opt %s --lower-to-memref=pool-mode=bogus 2>&1 | filecheck %s --check-prefix=VALUE
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

// ABBREV:   memplan-opt: error: abbreviated pass flag --manifest; write --manifest-alloc in full
// OPTION:   memplan-opt: error: in --lower-to-memref=mode=arg: invalid options for pass 'lower-to-memref': Provided arguments ["mode"] not found in expected arguments ["pool_mode"]
// VALUE:    memplan-opt: error: in --lower-to-memref=pool-mode=bogus: invalid options for pass 'lower-to-memref': Incompatible types: given ('bogus',)
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
