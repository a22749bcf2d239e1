// Plain upstream xdsl-opt knows the `memory` dialect through memplan's
// `xdsl.universe` entry point, and prints byte-identically to memplan-opt.
// RUN: memplan-opt %S/ops.mlir > %t.memplan
// RUN: xdsl-opt %S/ops.mlir > %t.xdsl
// RUN: diff %t.memplan %t.xdsl
// RUN: xdsl-opt %S/ops.mlir --print-op-generic | xdsl-opt | diff %t.memplan -
// RUN: memplan-opt %S/ops.mlir --print-op-generic > %t.generic.mlir
// RUN: xdsl-opt %t.generic.mlir --print-op-generic | diff %t.generic.mlir -
