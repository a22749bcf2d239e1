// `-o FILE` is replaced only when every chunk succeeded.
//
// A failing run leaves an existing FILE as it was (and leaves no temporary
// file next to it):
// RUN: rm -rf %t && mkdir %t && echo keep > %t/out.mlir
// RUN: not memplan-opt %s --split-input-file -o %t/out.mlir 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file %t/out.mlir --check-prefix=KEPT
// RUN: ls -a %t | filecheck %s --check-prefix=LS
//
// ... and creates no FILE when there was none:
// RUN: not memplan-opt %s --split-input-file -o %t/new.mlir 2>&1
// RUN: not ls %t/new.mlir
//
// A successful run writes FILE and nothing to stdout (input: the good chunk):
// RUN: echo 'func.func @good() {' > %t/good.mlir && echo '  func.return' >> %t/good.mlir && echo '}' >> %t/good.mlir
// RUN: memplan-opt %t/good.mlir -o %t/out.mlir > %t/stdout.txt
// RUN: filecheck %s --input-file %t/out.mlir --check-prefix=OK
// RUN: not filecheck %s --input-file %t/stdout.txt --check-prefix=OK
//
// An output directory that does not exist is reported:
// RUN: not memplan-opt %s -o %t/missing/out.mlir 2>&1 | filecheck %s --check-prefix=NODIR

// ERR:         output-file.mlir:[[# @LINE + 15]]:3: error: storage %s: alignment must be a power of two, got 48
// KEPT:        keep
// KEPT-NOT:    builtin.module
// LS-NOT:      .tmp
// OK:          func.func @good
// NODIR:       memplan-opt: error: cannot write output file '{{.*}}missing/out.mlir': No such file or directory

func.func @good() {
  %s = memory.alloc_storage : !memory.storage<64>
  func.return
}

// -----

func.func @bad_alignment() {
  %s = memory.alloc_storage align 48 : !memory.storage<64>
  func.return
}
