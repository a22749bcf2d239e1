// RUN: memplan-opt %s --manifest-alloc --split-input-file --verify-diagnostics | filecheck %s
// RUN: memplan-opt %s --manifest-alloc --split-input-file --verify-diagnostics --disable-verify | filecheck %s --check-prefix=NOVERIFY

// Sizes are prod(shape) * ceil(bits / 8) and alignments max(64, element
// bytes) (TVM's rule; `align 64` is the default and is not printed):
// 4x8xf32 = 128 B, 3x5xf16 = 30 B, 2x3xf64 = 48 B, 7xi8 = 7 B, 10xi1 = 10 B
// (one byte per i1), 5xi3 = 5 B, and 2xi1024 = 256 B aligned to its 128-byte
// element. Kernels without operands get an invoke without `ins`.
func.func private @make_f32() -> tensor<4x8xf32>
func.func private @make_f16() -> tensor<3x5xf16>
func.func private @make_f64() -> tensor<2x3xf64>
func.func private @make_i8() -> tensor<7xi8>
func.func private @make_i1() -> tensor<10xi1>
func.func private @make_i3() -> tensor<5xi3>
func.func private @make_i1024() -> tensor<2xi1024>
func.func @element_sizes() {
  %a = func.call @make_f32() : () -> tensor<4x8xf32>
  %b = func.call @make_f16() : () -> tensor<3x5xf16>
  %c = func.call @make_f64() : () -> tensor<2x3xf64>
  %d = func.call @make_i8() : () -> tensor<7xi8>
  %e = func.call @make_i1() : () -> tensor<10xi1>
  %f = func.call @make_i3() : () -> tensor<5xi3>
  %g = func.call @make_i1024() : () -> tensor<2xi1024>
  func.return
}

// CHECK-LABEL: func.func @element_sizes() {
// CHECK-NEXT:    %a_storage = memory.alloc_storage : !memory.storage<128>
// CHECK-NEXT:    %a = memory.alloc_tensor %a_storage[0] : !memory.storage<128> -> memref<4x8xf32>
// CHECK-NEXT:    memory.invoke @make_f32 outs(%a : memref<4x8xf32>)
// CHECK-NEXT:    %b_storage = memory.alloc_storage : !memory.storage<30>
// CHECK-NEXT:    %b = memory.alloc_tensor %b_storage[0] : !memory.storage<30> -> memref<3x5xf16>
// CHECK-NEXT:    memory.invoke @make_f16 outs(%b : memref<3x5xf16>)
// CHECK-NEXT:    %c_storage = memory.alloc_storage : !memory.storage<48>
// CHECK-NEXT:    %c = memory.alloc_tensor %c_storage[0] : !memory.storage<48> -> memref<2x3xf64>
// CHECK-NEXT:    memory.invoke @make_f64 outs(%c : memref<2x3xf64>)
// CHECK-NEXT:    %d_storage = memory.alloc_storage : !memory.storage<7>
// CHECK-NEXT:    %d = memory.alloc_tensor %d_storage[0] : !memory.storage<7> -> memref<7xi8>
// CHECK-NEXT:    memory.invoke @make_i8 outs(%d : memref<7xi8>)
// CHECK-NEXT:    %e_storage = memory.alloc_storage : !memory.storage<10>
// CHECK-NEXT:    %e = memory.alloc_tensor %e_storage[0] : !memory.storage<10> -> memref<10xi1>
// CHECK-NEXT:    memory.invoke @make_i1 outs(%e : memref<10xi1>)
// CHECK-NEXT:    %f_storage = memory.alloc_storage : !memory.storage<5>
// CHECK-NEXT:    %f = memory.alloc_tensor %f_storage[0] : !memory.storage<5> -> memref<5xi3>
// CHECK-NEXT:    memory.invoke @make_i3 outs(%f : memref<5xi3>)
// CHECK-NEXT:    %g_storage = memory.alloc_storage align 128 : !memory.storage<256>
// CHECK-NEXT:    %g = memory.alloc_tensor %g_storage[0] : !memory.storage<256> -> memref<2xi1024>
// CHECK-NEXT:    memory.invoke @make_i1024 outs(%g : memref<2xi1024>)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// -----

// A kernel with several results gets one storage per result (never one
// shared storage: merging is `coalesce`'s job), all written by one invoke.
// The 0-d tensor<f64> takes 8 bytes.
func.func private @split(tensor<8xf32>) -> (tensor<4xf32>, tensor<2x2xi8>, tensor<f64>)
func.func @several_results(%x: tensor<8xf32>) -> tensor<f64> {
  %lo, %mid, %hi = func.call @split(%x) : (tensor<8xf32>) -> (tensor<4xf32>, tensor<2x2xi8>, tensor<f64>)
  func.return %hi : tensor<f64>
}

// CHECK-LABEL: func.func @several_results(%x: memref<8xf32>) -> memref<f64> {
// CHECK-NEXT:    %lo_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %lo = memory.alloc_tensor %lo_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:    %mid_storage = memory.alloc_storage : !memory.storage<4>
// CHECK-NEXT:    %mid = memory.alloc_tensor %mid_storage[0] : !memory.storage<4> -> memref<2x2xi8>
// CHECK-NEXT:    %hi_storage = memory.alloc_storage : !memory.storage<8>
// CHECK-NEXT:    %hi = memory.alloc_tensor %hi_storage[0] : !memory.storage<8> -> memref<f64>
// CHECK-NEXT:    memory.invoke @split ins(%x : memref<8xf32>) outs(%lo, %mid, %hi : memref<4xf32>, memref<2x2xi8>, memref<f64>)
// CHECK-NEXT:    func.return %hi : memref<f64>
// CHECK-NEXT:  }

// -----

// The function boundary becomes memrefs: tensor arguments and results turn
// into memrefs of the same shape (dynamic dims included), scalars stay. A
// returned kernel result is allocated inside the function and escapes to the
// caller; a returned argument is returned as is. The kernel declaration
// becomes destination-passing: (ins..., outs...) -> () on memrefs.
func.func private @scale(tensor<?x4xf32>, f32) -> tensor<2x4xf32>
func.func @boundary(%x: tensor<?x4xf32>, %alpha: f32, %n: index) -> (tensor<2x4xf32>, tensor<?x4xf32>, index) {
  %y = func.call @scale(%x, %alpha) : (tensor<?x4xf32>, f32) -> tensor<2x4xf32>
  func.return %y, %x, %n : tensor<2x4xf32>, tensor<?x4xf32>, index
}
func.func @identity(%x: tensor<3xi32>) -> tensor<3xi32> {
  func.return %x : tensor<3xi32>
}

// CHECK:       func.func private @scale(memref<?x4xf32>, f32, memref<2x4xf32>) -> ()
// CHECK-LABEL: func.func @boundary(%x: memref<?x4xf32>, %alpha: f32, %n: index) -> (memref<2x4xf32>, memref<?x4xf32>, index) {
// CHECK-NEXT:    %y_storage = memory.alloc_storage : !memory.storage<32>
// CHECK-NEXT:    %y = memory.alloc_tensor %y_storage[0] : !memory.storage<32> -> memref<2x4xf32>
// CHECK-NEXT:    memory.invoke @scale ins(%x, %alpha : memref<?x4xf32>, f32) outs(%y : memref<2x4xf32>)
// CHECK-NEXT:    func.return %y, %x, %n : memref<2x4xf32>, memref<?x4xf32>, index
// CHECK-NEXT:  }
// CHECK:       func.func @identity(%x: memref<3xi32>) -> memref<3xi32> {
// CHECK-NEXT:    func.return %x : memref<3xi32>

// -----

// Scalars (i32, f32, index) pass through into `ins` in call order, and the
// call's discardable attributes move to the invoke unchanged.
func.func private @axpy(f32, tensor<16xf32>, i32, index) -> tensor<16xf32>
func.func @scalars_and_attributes(%a: f32, %x: tensor<16xf32>, %k: i32, %n: index) -> tensor<16xf32> {
  %y = func.call @axpy(%a, %x, %k, %n) {tile = [4, 4], fused = "relu"} : (f32, tensor<16xf32>, i32, index) -> tensor<16xf32>
  func.return %y : tensor<16xf32>
}

// CHECK-LABEL: func.func @scalars_and_attributes(
// CHECK:         memory.invoke @axpy ins(%a, %x, %k, %n : f32, memref<16xf32>, i32, index) outs(%y : memref<16xf32>) {tile = [4 : i64, 4 : i64], fused = "relu"}

// -----

// Dense tensor constants become module-level read-only globals, never
// workspace: `memref.global` (printed in generic form by xDSL; upstream MLIR
// reads it as `memref.global "private" constant @... = dense<...>`) aligned
// like storages, read with `memref.get_global`. Names count per function
// from 0 and skip symbols already taken (`@__constant_constants_0` exists
// here). Scalar constants are left alone.
func.func private @__constant_constants_0()
func.func private @add(tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
func.func @constants(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0 : index
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = arith.constant dense<0.5> : tensor<2x2xf32>
  %h = func.call @add(%x, %w) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = func.call @add(%h, %b) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}

// CHECK:       "memref.global"() <{sym_name = "__constant_constants_1", type = memref<2x2xf32>, initial_value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()
// CHECK-NEXT:  "memref.global"() <{sym_name = "__constant_constants_2", type = memref<2x2xf32>, initial_value = dense<5.000000e-01> : tensor<2x2xf32>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()
// CHECK-LABEL: func.func @constants(%x: memref<2x2xf32>) -> memref<2x2xf32> {
// CHECK-NEXT:    %zero = arith.constant 0 : index
// CHECK-NEXT:    %w = memref.get_global @__constant_constants_1 : memref<2x2xf32>
// CHECK-NEXT:    %b = memref.get_global @__constant_constants_2 : memref<2x2xf32>
// CHECK-NEXT:    %h_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %h = memory.alloc_tensor %h_storage[0] : !memory.storage<16> -> memref<2x2xf32>
// CHECK-NEXT:    memory.invoke @add ins(%x, %w : memref<2x2xf32>, memref<2x2xf32>) outs(%h : memref<2x2xf32>)
// CHECK:         memory.invoke @add ins(%h, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%y : memref<2x2xf32>)

// -----

// A `memory.view` kernel (reshape) allocates nothing and is not invoked: its
// result aliases its one tensor operand through `memref.reinterpret_cast`
// with offset 0 and the new shape's identity strides (valid upstream for any
// reshape of an identity-layout memref). Other operands (here the index) are
// ignored. Views chain, and views of arguments and constants work the same.
func.func private @reshape(tensor<2x3x4xf32>, index) -> tensor<6x4xf32> attributes {memory.view}
func.func private @flatten(tensor<6x4xf32>) -> tensor<24xf32> attributes {memory.view}
func.func private @to_scalar(tensor<1x1xi8>) -> tensor<i8> attributes {memory.view}
func.func @views(%x: tensor<2x3x4xf32>, %n: index) -> (tensor<24xf32>, tensor<i8>) {
  %c = arith.constant dense<7> : tensor<1x1xi8>
  %r = func.call @reshape(%x, %n) : (tensor<2x3x4xf32>, index) -> tensor<6x4xf32>
  %f = func.call @flatten(%r) : (tensor<6x4xf32>) -> tensor<24xf32>
  %s = func.call @to_scalar(%c) : (tensor<1x1xi8>) -> tensor<i8>
  func.return %f, %s : tensor<24xf32>, tensor<i8>
}

// CHECK-LABEL: func.func @views(%x: memref<2x3x4xf32>, %n: index) -> (memref<24xf32>, memref<i8>) {
// CHECK-NEXT:    %c = memref.get_global @__constant_views_0 : memref<1x1xi8>
// CHECK-NEXT:    %r = memref.reinterpret_cast %x to offset: [0], sizes: [6, 4], strides: [4, 1] : memref<2x3x4xf32> to memref<6x4xf32>
// CHECK-NEXT:    %f = memref.reinterpret_cast %r to offset: [0], sizes: [24], strides: [1] : memref<6x4xf32> to memref<24xf32>
// CHECK-NEXT:    %s = memref.reinterpret_cast %c to offset: [0], sizes: [], strides: [] : memref<1x1xi8> to memref<i8>
// CHECK-NEXT:    func.return %f, %s : memref<24xf32>, memref<i8>
// CHECK-NEXT:  }

// -----

// Devices: a kernel declared `memory.device = "npu"` allocates its results
// `on "npu"`; a call-site `memory.device` selects the device of one call of
// a default (cpu) kernel, and may repeat the declaration's device. The
// attribute stays on the invoke like every discardable attribute.
func.func private @npu_conv(tensor<8xf32>) -> tensor<8xf32> attributes {memory.device = "npu"}
func.func private @relu(tensor<8xf32>) -> tensor<8xf32>
func.func @devices(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = func.call @npu_conv(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %b = func.call @relu(%a) {memory.device = "dsp"} : (tensor<8xf32>) -> tensor<8xf32>
  %c = func.call @npu_conv(%b) {memory.device = "npu"} : (tensor<8xf32>) -> tensor<8xf32>
  %d = func.call @relu(%c) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %d : tensor<8xf32>
}

// CHECK-LABEL: func.func @devices(
// CHECK-NEXT:    %a_storage = memory.alloc_storage on "npu" : !memory.storage<32>
// CHECK:         memory.invoke @npu_conv ins(%x : memref<8xf32>) outs(%a : memref<8xf32>)
// CHECK-NEXT:    %b_storage = memory.alloc_storage on "dsp" : !memory.storage<32>
// CHECK:         memory.invoke @relu ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {memory.device = "dsp"}
// CHECK-NEXT:    %c_storage = memory.alloc_storage on "npu" : !memory.storage<32>
// CHECK:         memory.invoke @npu_conv ins(%b : memref<8xf32>) outs(%c : memref<8xf32>) {memory.device = "npu"}
// CHECK-NEXT:    %d_storage = memory.alloc_storage : !memory.storage<32>

// -----

// Dynamic result dims come from the kernel's `memory.shape_fn`, called once
// per call on the memref operands; it returns one index per `?` of the
// results, in result order. Each dynamic storage is `!memory.storage<?>`
// sized d0 * d1 * (static dims * element bytes): ?x16xf32 is d0 * 64 bytes,
// ?x?xf64 is d1 * d2 * 8 bytes, and ?xi8 is d3 itself (factor 1, no
// multiply). Alignment follows the static rule. The dims and sizes are
// named after the result (%a_dim0, %a_bytes).
func.func private @nonzero(tensor<?x16xf32>, i32) -> (tensor<?x16xf32>, tensor<?x?xf64>, tensor<?xi8>) attributes {memory.shape_fn = @nonzero_shape}
func.func private @nonzero_shape(tensor<?x16xf32>, i32) -> (index, index, index, index)
func.func @dynamic(%x: tensor<?x16xf32>, %k: i32) -> tensor<?x?xf64> {
  %a, %b, %c = func.call @nonzero(%x, %k) : (tensor<?x16xf32>, i32) -> (tensor<?x16xf32>, tensor<?x?xf64>, tensor<?xi8>)
  func.return %b : tensor<?x?xf64>
}

// CHECK:       func.func private @nonzero(memref<?x16xf32>, i32, memref<?x16xf32>, memref<?x?xf64>, memref<?xi8>) -> () attributes {memory.shape_fn = @nonzero_shape}
// CHECK-NEXT:  func.func private @nonzero_shape(memref<?x16xf32>, i32) -> (index, index, index, index)
// CHECK-LABEL: func.func @dynamic(%x: memref<?x16xf32>, %k: i32) -> memref<?x?xf64> {
// CHECK-NEXT:    %a_dim0, %b_dim0, %b_dim1, %c_dim0 = func.call @nonzero_shape(%x, %k) : (memref<?x16xf32>, i32) -> (index, index, index, index)
// CHECK-NEXT:    %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %a_bytes = arith.muli %a_dim0, %[[C64]] : index
// CHECK-NEXT:    %a_storage = memory.alloc_storage(%a_bytes) : !memory.storage<?>
// CHECK-NEXT:    %a = memory.alloc_tensor %a_storage[0](%a_dim0) : !memory.storage<?> -> memref<?x16xf32>
// CHECK-NEXT:    %[[D01:.*]] = arith.muli %b_dim0, %b_dim1 : index
// CHECK-NEXT:    %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %b_bytes = arith.muli %[[D01]], %[[C8]] : index
// CHECK-NEXT:    %b_storage = memory.alloc_storage(%b_bytes) : !memory.storage<?>
// CHECK-NEXT:    %b = memory.alloc_tensor %b_storage[0](%b_dim0, %b_dim1) : !memory.storage<?> -> memref<?x?xf64>
// CHECK-NEXT:    %c_storage = memory.alloc_storage(%c_dim0) : !memory.storage<?>
// CHECK-NEXT:    %c = memory.alloc_tensor %c_storage[0](%c_dim0) : !memory.storage<?> -> memref<?xi8>
// CHECK-NEXT:    memory.invoke @nonzero ins(%x, %k : memref<?x16xf32>, i32) outs(%a, %b, %c : memref<?x16xf32>, memref<?x?xf64>, memref<?xi8>)
// CHECK-NEXT:    func.return %b : memref<?x?xf64>

// -----

// A shape function may have a body: its tensor arguments become memrefs
// like any function's, and `tensor.dim` on them becomes `memref.dim`.
func.func private @unique(tensor<?xi32>) -> tensor<?xi32> attributes {memory.shape_fn = @unique_shape}
func.func @unique_shape(%x: tensor<?xi32>) -> index {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xi32>
  func.return %n : index
}
func.func @shape_fn_with_body(%x: tensor<?xi32>) -> tensor<?xi32> {
  %u = func.call @unique(%x) : (tensor<?xi32>) -> tensor<?xi32>
  func.return %u : tensor<?xi32>
}

// CHECK:       func.func @unique_shape(%x: memref<?xi32>) -> index {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %n = memref.dim %x, %c0 : memref<?xi32>
// CHECK-NEXT:    func.return %n : index
// CHECK-LABEL: func.func @shape_fn_with_body(%x: memref<?xi32>) -> memref<?xi32> {
// CHECK-NEXT:    %u_dim0 = func.call @unique_shape(%x) : (memref<?xi32>) -> index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %u_bytes = arith.muli %u_dim0, %[[C4]] : index
// CHECK-NEXT:    %u_storage = memory.alloc_storage(%u_bytes) : !memory.storage<?>
// CHECK-NEXT:    %u = memory.alloc_tensor %u_storage[0](%u_dim0) : !memory.storage<?> -> memref<?xi32>
// CHECK-NEXT:    memory.invoke @unique ins(%x : memref<?xi32>) outs(%u : memref<?xi32>)

// -----

// Calls nested in regions are rewritten in place: their storages live in the
// region. Tensor results of `scf.if` become memref results, each branch
// yielding its own storage's tensor (which then escapes the branch). A call
// in an `scf.for` body whose tensor stays inside the body gets a storage in
// the body: one buffer reused by every iteration.
func.func private @relu(tensor<4xf32>) -> tensor<4xf32>
func.func private @neg(tensor<4xf32>) -> tensor<4xf32>
func.func private @sink(tensor<4xf32>)
func.func @regions(%x: tensor<4xf32>, %cond: i1, %n: index) -> tensor<4xf32> {
  %y = scf.if %cond -> (tensor<4xf32>) {
    %r = func.call @relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %r : tensor<4xf32>
  } else {
    %m = func.call @neg(%x) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %m : tensor<4xf32>
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = func.call @relu(%y) : (tensor<4xf32>) -> tensor<4xf32>
    func.call @sink(%t) : (tensor<4xf32>) -> ()
  }
  func.return %y : tensor<4xf32>
}

// CHECK:       func.func private @sink(memref<4xf32>) -> ()
// CHECK-LABEL: func.func @regions(%x: memref<4xf32>, %cond: i1, %n: index) -> memref<4xf32> {
// CHECK-NEXT:    %y = scf.if %cond -> (memref<4xf32>) {
// CHECK-NEXT:      %r_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:      %r = memory.alloc_tensor %r_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:      memory.invoke @relu ins(%x : memref<4xf32>) outs(%r : memref<4xf32>)
// CHECK-NEXT:      scf.yield %r : memref<4xf32>
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %m_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:      %m = memory.alloc_tensor %m_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:      memory.invoke @neg ins(%x : memref<4xf32>) outs(%m : memref<4xf32>)
// CHECK-NEXT:      scf.yield %m : memref<4xf32>
// CHECK-NEXT:    }
// CHECK:         scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:      %t_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:      %t = memory.alloc_tensor %t_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:      memory.invoke @relu ins(%y : memref<4xf32>) outs(%t : memref<4xf32>)
// CHECK-NEXT:      memory.invoke @sink ins(%t : memref<4xf32>)
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : memref<4xf32>

// -----

// A branch condition computed by a kernel (an ONNX `If`'s): `tensor.extract`
// of its one element becomes a `memref.load` of the result's memref.
func.func private @positive(tensor<4xf32>) -> tensor<1xi1>
func.func @condition(%x: tensor<4xf32>) -> i1 {
  %p = func.call @positive(%x) : (tensor<4xf32>) -> tensor<1xi1>
  %c0 = arith.constant 0 : index
  %b = tensor.extract %p[%c0] : tensor<1xi1>
  func.return %b : i1
}

// CHECK-LABEL: func.func @condition(%x: memref<4xf32>) -> i1 {
// CHECK:         memory.invoke @positive ins(%x : memref<4xf32>) outs(%p : memref<1xi1>)
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %b = memref.load %p[%c0] : memref<1xi1>
// CHECK-NEXT:    func.return %b : i1

// -----

// A tensor built from scalars (an ONNX Loop's iteration number) gets a
// storage of its own (2x2xi64: 32 bytes), filled by one `memref.store` per
// element in row-major order.
func.func private @gather(tensor<2x2xi64>) -> tensor<4xf32>
func.func @from_scalars(%a: i64, %b: i64) -> tensor<4xf32> {
  %t = tensor.from_elements %a, %b, %b, %a : tensor<2x2xi64>
  %g = func.call @gather(%t) : (tensor<2x2xi64>) -> tensor<4xf32>
  func.return %g : tensor<4xf32>
}

// CHECK-LABEL: func.func @from_scalars(%a: i64, %b: i64) -> memref<4xf32> {
// CHECK-NEXT:    %t_storage = memory.alloc_storage : !memory.storage<32>
// CHECK-NEXT:    %t = memory.alloc_tensor %t_storage[0] : !memory.storage<32> -> memref<2x2xi64>
// CHECK-NEXT:    %0 = arith.constant 0 : index
// CHECK-NEXT:    memref.store %a, %t[%0, %0] : memref<2x2xi64>
// CHECK-NEXT:    %1 = arith.constant 1 : index
// CHECK-NEXT:    memref.store %b, %t[%0, %1] : memref<2x2xi64>
// CHECK-NEXT:    memref.store %b, %t[%1, %0] : memref<2x2xi64>
// CHECK-NEXT:    memref.store %a, %t[%1, %1] : memref<2x2xi64>
// CHECK-NEXT:    %g_storage = memory.alloc_storage

// -----

// Calls without tensors are not kernel calls and stay as they are (scalar
// helpers with or without a body); declarations without tensors keep their
// signature.
func.func private @query() -> index
func.func @twice(%n: index) -> index {
  %c2 = arith.constant 2 : index
  %m = arith.muli %n, %c2 : index
  func.return %m : index
}
func.func @scalar_calls() -> index {
  %n = func.call @query() : () -> index
  %m = func.call @twice(%n) : (index) -> index
  func.return %m : index
}

// CHECK:       func.func private @query() -> index
// CHECK-LABEL: func.func @scalar_calls() -> index {
// CHECK-NEXT:    %n = func.call @query() : () -> index
// CHECK-NEXT:    %m = func.call @twice(%n) : (index) -> index
// CHECK-NEXT:    func.return %m : index

// -----

// Error: calls between functions with bodies are not rewritten: the callee's
// escaping results would be planned into the same pools as the caller's
// buffers. Inline first.
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
func.func @call_with_body(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: call to @helper: not a kernel declaration (it has a body); manifest-alloc rewrites calls of bodiless kernel declarations only, inline @helper first

// -----

// Error: an unranked tensor has no byte size. The kernel's declaration is
// checked before its calls.
func.func private @unranked_kernel(tensor<*xf32>) -> tensor<4xf32>
func.func @unranked(%x: tensor<*xf32>) -> tensor<4xf32> {
  %y = func.call @unranked_kernel(%x) : (tensor<*xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: kernel @unranked_kernel: operand #0 has unranked tensor type tensor<*xf32>: manifest-alloc needs ranked tensors to size their storage

// -----

// Error: an unranked function argument, even when no kernel uses it.
func.func @unranked_argument(%x: tensor<*xf32>) -> tensor<*xf32> {
  func.return %x : tensor<*xf32>
}

// CHECK-LABEL: function @unranked_argument: argument #0 has unranked tensor type tensor<*xf32>: manifest-alloc needs ranked tensors to size their storage

// -----

// Error: `index` has no fixed bit width, so a tensor<...xindex> result has
// no byte size.
func.func private @iota() -> tensor<8xindex>
func.func @index_elements() -> tensor<8xindex> {
  %y = func.call @iota() : () -> tensor<8xindex>
  func.return %y : tensor<8xindex>
}

// CHECK-LABEL: kernel @iota: result #0 has type tensor<8xindex>: element type index has no fixed bit width, so its byte size is unknown

// -----

// Error: kernel operands are ranked tensors or scalars; a vector (or a
// memref) is neither.
func.func private @vector_kernel(tensor<4xf32>, vector<4xf32>) -> tensor<4xf32>
func.func @vector_operand(%x: tensor<4xf32>, %v: vector<4xf32>) -> tensor<4xf32> {
  %y = func.call @vector_kernel(%x, %v) : (tensor<4xf32>, vector<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: kernel @vector_kernel: operand #1 has type vector<4xf32>, which is neither a ranked tensor, a memref (memory the plan does not hold, e.g. a mutable global) nor a scalar (integer, index, float)

// -----

// Error: a destination-passing kernel returns tensors only.
func.func private @count(tensor<4xf32>) -> i32
func.func @scalar_result(%x: tensor<4xf32>) -> i32 {
  %n = func.call @count(%x) : (tensor<4xf32>) -> i32
  func.return %n : i32
}

// CHECK-LABEL: kernel @count: result #0 has type i32: kernel results must be ranked tensors (a destination-passing kernel cannot return a scalar)

// -----

// A zero-element result gets a storage of 0 bytes (usmp gives it no pool
// bytes: test_lit/passes/plan-zero-bytes.mlir).
func.func private @empty_kernel() -> tensor<0x4xf32>
func.func @zero_bytes() -> tensor<0x4xf32> {
  %y = func.call @empty_kernel() : () -> tensor<0x4xf32>
  func.return %y : tensor<0x4xf32>
}

// CHECK-LABEL: func.func @zero_bytes() -> memref<0x4xf32>
// CHECK-NEXT:    %y_storage = memory.alloc_storage : !memory.storage<0>
// CHECK-NEXT:    %y = memory.alloc_tensor %y_storage[0] : !memory.storage<0> -> memref<0x4xf32>
// CHECK-NEXT:    memory.invoke @empty_kernel outs(%y : memref<0x4xf32>)

// -----

// Error: a result with dynamic dims needs the kernel's shape function.
func.func private @filter(tensor<8xf32>) -> tensor<?xf32>
func.func @dynamic_without_shape_fn(%x: tensor<8xf32>) -> tensor<?xf32> {
  %y = func.call @filter(%x) : (tensor<8xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// CHECK-LABEL: kernel @filter: result #0 of type tensor<?xf32> has dynamic dims but @filter has no memory.shape_fn

// -----

// Error: the shape function must return one index per dynamic dim (two
// here) and take the kernel's operands.
func.func private @pairs(tensor<8xf32>) -> tensor<?x?xf32> attributes {memory.shape_fn = @pairs_shape}
func.func private @pairs_shape(tensor<8xf32>) -> index
func.func @bad_shape_fn_results(%x: tensor<8xf32>) -> tensor<?x?xf32> {
  %y = func.call @pairs(%x) : (tensor<8xf32>) -> tensor<?x?xf32>
  func.return %y : tensor<?x?xf32>
}

// CHECK-LABEL: shape function @pairs_shape of kernel @pairs must return 2 index values (one per dynamic dim of the results), got (index)

// -----

func.func private @pairs(tensor<8xf32>) -> tensor<?xf32> attributes {memory.shape_fn = @pairs_shape}
func.func private @pairs_shape(tensor<8xi32>) -> index
func.func @bad_shape_fn_operands(%x: tensor<8xf32>) -> tensor<?xf32> {
  %y = func.call @pairs(%x) : (tensor<8xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// CHECK-LABEL: shape function @pairs_shape of kernel @pairs takes (memref<8xi32>) but the kernel's operands are (memref<8xf32>)

// -----

// Error: `memory.shape_fn` names a symbol that is not a function.
func.func private @ghost_kernel(tensor<8xf32>) -> tensor<?xf32> attributes {memory.shape_fn = @ghost}
func.func @missing_shape_fn(%x: tensor<8xf32>) -> tensor<?xf32> {
  %y = func.call @ghost_kernel(%x) : (tensor<8xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// CHECK-LABEL: @ghost_kernel: shape function @ghost is not a func.func (no such symbol)

// -----

// Error: the call site asks for another device than the declaration.
func.func private @npu_only(tensor<8xf32>) -> tensor<8xf32> attributes {memory.device = "npu"}
func.func @device_conflict(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = func.call @npu_only(%x) {memory.device = "cpu"} : (tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// CHECK-LABEL: call to @npu_only: call-site memory.device "cpu" conflicts with "npu" on the declaration of @npu_only

// -----

// Error: a view kernel cannot change the element count...
func.func private @bad_reshape(tensor<2x3xf32>) -> tensor<4xf32> attributes {memory.view}
func.func @view_count(%x: tensor<2x3xf32>) -> tensor<4xf32> {
  %y = func.call @bad_reshape(%x) : (tensor<2x3xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: view kernel @bad_reshape: tensor<2x3xf32> has 6 elements but tensor<4xf32> has 4

// -----

// ...nor the element type (a bitcast is not an alias of the same values).
func.func private @bitcast(tensor<4xf32>) -> tensor<4xi32> attributes {memory.view}
func.func @view_type(%x: tensor<4xf32>) -> tensor<4xi32> {
  %y = func.call @bitcast(%x) : (tensor<4xf32>) -> tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// CHECK-LABEL: view kernel @bitcast: element type f32 of tensor<4xf32> differs from i32 of tensor<4xi32>

// -----

// Error: ops other than kernel calls, constants, tensor.dim, tensor.extract,
// tensor.from_elements, scf.if, scf.for and returns must not produce or
// consume tensors.
func.func @other_tensor_op(%n: index) -> tensor<?xf32> {
  %e = tensor.empty(%n) : tensor<?xf32>
  func.return %e : tensor<?xf32>
}

// CHECK-LABEL: tensor.empty: result %e has tensor type tensor<?xf32>; manifest-alloc handles tensors only in func.call of kernel declarations, arith.constant, tensor.dim, tensor.extract, tensor.from_elements, scf.if, scf.for, scf.while, scf.condition, scf.yield and func.return

// -----

// Tensors carried by an scf.for get storages allocated before the loop, so
// that no storage inside it holds a value alive in two iterations. %acc's
// new value is written after the last read of the old one (@double reads
// it, then @add_inplace is its last reader and declares the pair in place):
// one buffer, written over. %acc starts in @relu's storage, since the loop
// is the last use of %init: no copy. %p's old value is read by @mul, which
// writes its new value: a second buffer, carried as an extra iteration
// argument (%p_spare) and swapped with the first by the yield. %p starts as
// the argument %x, which is copied into its first buffer.
func.func private @add_inplace(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func private @mul(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func private @double(tensor<4xf32>) -> tensor<4xf32>
func.func private @relu(tensor<4xf32>) -> tensor<4xf32>
func.func @loop_carried(%x: tensor<4xf32>, %n: index) -> (tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = func.call @relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r, %q = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init, %p = %x) -> (tensor<4xf32>, tensor<4xf32>) {
    %d = func.call @double(%acc) : (tensor<4xf32>) -> tensor<4xf32>
    %s = func.call @add_inplace(%acc, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %m = func.call @mul(%p, %p) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %s, %m : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r, %q : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @loop_carried(%x: memref<4xf32>, %n: index) -> (memref<4xf32>, memref<4xf32>) {
// CHECK:         %init_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %init = memory.alloc_tensor %init_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:    memory.invoke @relu ins(%x : memref<4xf32>) outs(%init : memref<4xf32>)
// CHECK-NEXT:    %q_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %q_buffer = memory.alloc_tensor %q_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:    "memref.copy"(%x, %q_buffer) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    %q_spare_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %q_spare = memory.alloc_tensor %q_spare_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:    %r, %q, %0 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init, %p = %q_buffer, %p_spare = %q_spare) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>) {
// CHECK-NEXT:      %d_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:      %d = memory.alloc_tensor %d_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:      memory.invoke @double ins(%acc : memref<4xf32>) outs(%d : memref<4xf32>)
// CHECK-NEXT:      memory.invoke @add_inplace ins(%acc, %d : memref<4xf32>, memref<4xf32>) outs(%acc : memref<4xf32>)
// CHECK-NEXT:      memory.invoke @mul ins(%p, %p : memref<4xf32>, memref<4xf32>) outs(%p_spare : memref<4xf32>)
// CHECK-NEXT:      scf.yield %acc, %p_spare, %p : memref<4xf32>, memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %q : memref<4xf32>, memref<4xf32>

// -----

// A yielded value that no kernel call of the body computes (here a view of
// the old value, and another carried value: the two are swapped) is copied
// into the second buffer before the yield. A value yielded unchanged needs
// neither a second buffer nor a copy (%keep).
func.func private @flat(tensor<4xf32>) -> tensor<2x2xf32> attributes {memory.view}
func.func private @unflat(tensor<2x2xf32>) -> tensor<4xf32> attributes {memory.view}
func.func @loop_copies(%x: tensor<4xf32>, %y: tensor<4xf32>, %n: index) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a, %b, %k = scf.for %i = %c0 to %n step %c1 iter_args(%u = %x, %v = %y, %keep = %x) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %f = func.call @flat(%v) : (tensor<4xf32>) -> tensor<2x2xf32>
    %g = func.call @unflat(%f) : (tensor<2x2xf32>) -> tensor<4xf32>
    scf.yield %g, %u, %keep : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  func.return %a, %b, %k : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @loop_copies
// CHECK:         %a, %b, %k, %0, %1 = scf.for %i = %c0 to %n step %c1 iter_args(%u = %a_buffer, %v = %b_buffer, %keep = %k_buffer, %u_spare = %a_spare, %v_spare = %b_spare)
// CHECK-NEXT:      %f = memref.reinterpret_cast %v
// CHECK-NEXT:      %g = memref.reinterpret_cast %f
// CHECK-NEXT:      "memref.copy"(%g, %u_spare) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:      "memref.copy"(%u, %v_spare) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:      scf.yield %u_spare, %v_spare, %keep, %u, %v : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>

// -----

// Error: a carried tensor's storages are allocated once, before the loop,
// so its shape must be static.
func.func @loop_carried_dynamic(%x: tensor<?xf32>, %n: index) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (tensor<?xf32>) {
    scf.yield %acc : tensor<?xf32>
  }
  func.return %r : tensor<?xf32>
}

// CHECK-LABEL: scf.for carried tensor %r has type tensor<?xf32>: a carried tensor needs a static shape (its storages are allocated once, before the loop)

// -----

// Tensors carried by an scf.while get storages allocated before the loop
// too. Its condition region only decides (scf.condition forwards its
// arguments), so the region's arguments and the body's are one set of
// buffers. %acc: written over by @add_inplace (one buffer). %p: @mul reads
// the old value while writing the new one, so a spare is an extra argument
// of both regions, forwarded by scf.condition and swapped by the yield.
// @less's flag lives in a storage of the condition region.
func.func private @add_inplace(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> attributes {memory.inplace = array<i64: 0, 0>}
func.func private @mul(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func private @double(tensor<4xf32>) -> tensor<4xf32>
func.func private @relu(tensor<4xf32>) -> tensor<4xf32>
func.func private @less(tensor<4xf32>, tensor<4xf32>) -> tensor<i1>
func.func @while_carried(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %init = func.call @relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r, %q = scf.while (%acc = %init, %p = %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %flag = func.call @less(%acc, %p) : (tensor<4xf32>, tensor<4xf32>) -> tensor<i1>
    %go = tensor.extract %flag[] : tensor<i1>
    scf.condition(%go) %acc, %p : tensor<4xf32>, tensor<4xf32>
  } do {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %d = func.call @double(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %s = func.call @add_inplace(%a, %d) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %m = func.call @mul(%b, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %s, %m : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r, %q : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @while_carried(%x: memref<4xf32>, %y: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
// CHECK:         memory.invoke @relu ins(%x : memref<4xf32>) outs(%init : memref<4xf32>)
// CHECK-NEXT:    %q_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %q_buffer = memory.alloc_tensor %q_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:    "memref.copy"(%y, %q_buffer) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    %q_spare_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %q_spare = memory.alloc_tensor %q_spare_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:    %r, %q, %0 = scf.while (%acc = %init, %p = %q_buffer, %b_spare = %q_spare) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>) {
// CHECK-NEXT:      %flag_storage = memory.alloc_storage : !memory.storage<1>
// CHECK-NEXT:      %flag = memory.alloc_tensor %flag_storage[0] : !memory.storage<1> -> memref<i1>
// CHECK-NEXT:      memory.invoke @less ins(%acc, %p : memref<4xf32>, memref<4xf32>) outs(%flag : memref<i1>)
// CHECK-NEXT:      %go = memref.load %flag[] : memref<i1>
// CHECK-NEXT:      scf.condition(%go) %acc, %p, %b_spare : memref<4xf32>, memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    } do {
// CHECK-NEXT:    ^bb0(%a: memref<4xf32>, %b: memref<4xf32>, %b_spare_1: memref<4xf32>):
// CHECK:           memory.invoke @double ins(%a : memref<4xf32>) outs(%d : memref<4xf32>)
// CHECK-NEXT:      memory.invoke @add_inplace ins(%a, %d : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>)
// CHECK-NEXT:      memory.invoke @mul ins(%b, %b : memref<4xf32>, memref<4xf32>) outs(%b_spare_1 : memref<4xf32>)
// CHECK-NEXT:      scf.yield %a, %b_spare_1, %b : memref<4xf32>, memref<4xf32>, memref<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %q : memref<4xf32>, memref<4xf32>

// -----

// Error: an scf.while carrying tensors whose condition region computes what
// it forwards (the body's arguments would be other buffers than its own).
func.func private @double(tensor<4xf32>) -> tensor<4xf32>
func.func @while_forwarding_other_values(%x: tensor<4xf32>, %go: i1) -> tensor<4xf32> {
  %r = scf.while (%acc = %x) : (tensor<4xf32>) -> tensor<4xf32> {
    %d = func.call @double(%acc) : (tensor<4xf32>) -> tensor<4xf32>
    scf.condition(%go) %d : tensor<4xf32>
  } do {
  ^bb0(%next: tensor<4xf32>):
    scf.yield %next : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: scf.condition must forward the arguments of its scf.while's first region unchanged and in order when the loop carries tensors (the condition region only decides; the body computes the next values)

// -----

// Error: only dense<...> tensor constants become globals.
func.func @resource_constant() -> tensor<4xf32> {
  %c = arith.constant dense_resource<blob> : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// CHECK-LABEL: constant %c of type tensor<4xf32>: only dense<...> tensor constants are supported

// -----

// Error (input not verified): a call to an unknown symbol. With verification
// on, the func.call verifier reports it before the pass runs.
func.func @unknown_callee(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @nowhere(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: '@nowhere' could not be found in symbol table
// NOVERIFY:    call to @nowhere: unknown callee (no such symbol)

// -----

// Constants imported by memplan-import-onnx are `memref.global`s read with
// `memref.get_global` and `bufferization.to_tensor`: the to_tensor is dropped
// and every use (the kernel's `ins`, the return) reads the global's memref
// directly, so a constant never takes workspace: only %y gets a storage.
"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<2x2xf32>, initial_value, constant}> : () -> ()
func.func private @add(tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
func.func @imported_constants(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %m = memref.get_global @w : memref<2x2xf32>
  %w = bufferization.to_tensor %m restrict : memref<2x2xf32> to tensor<2x2xf32>
  %y = func.call @add(%x, %w) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %y, %w : tensor<2x2xf32>, tensor<2x2xf32>
}

// CHECK-LABEL: func.func @imported_constants(%x: memref<2x2xf32>) -> (memref<2x2xf32>, memref<2x2xf32>) {
// CHECK-NEXT:    %m = memref.get_global @w : memref<2x2xf32>
// CHECK-NEXT:    %y_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %y = memory.alloc_tensor %y_storage[0] : !memory.storage<16> -> memref<2x2xf32>
// CHECK-NEXT:    memory.invoke @add ins(%x, %m : memref<2x2xf32>, memref<2x2xf32>) outs(%y : memref<2x2xf32>)
// CHECK-NEXT:    func.return %y, %m : memref<2x2xf32>, memref<2x2xf32>
// CHECK-NEXT:  }

// -----

// Error: `bufferization.to_tensor` is accepted only on a global's memref (a
// constant); of any other memref it would hide memory the planner must see.
func.func @to_tensor_of_argument(%m: memref<4xf32>) -> tensor<4xf32> {
  %t = bufferization.to_tensor %m restrict : memref<4xf32> to tensor<4xf32>
  func.return %t : tensor<4xf32>
}

// CHECK-LABEL: bufferization.to_tensor %t: only tensors of a memref.get_global (an imported constant) are supported

// -----

// A mutable global (a TFLite resource variable, memplan-import-tflite): a
// kernel reads it through a memref operand into a tensor of its own (%old),
// and `bufferization.materialize_in_destination` writes a tensor into it,
// which becomes a `memref.copy` from the tensor's storage: the global never
// takes workspace, and %new stays live until the copy has read it.
"memref.global"() <{sym_name = "state", sym_visibility = "private", type = memref<4xf32>, initial_value}> : () -> ()
func.func private @read(memref<4xf32>) -> tensor<4xf32>
func.func private @add(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
func.func @variable(%x: tensor<4xf32>) -> tensor<4xf32> {
  %g = memref.get_global @state : memref<4xf32>
  %old = func.call @read(%g) : (memref<4xf32>) -> tensor<4xf32>
  %new = func.call @add(%old, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  bufferization.materialize_in_destination %new in restrict writable %g : (tensor<4xf32>, memref<4xf32>) -> ()
  func.return %new : tensor<4xf32>
}

// CHECK-LABEL: func.func @variable(%x: memref<4xf32>) -> memref<4xf32> {
// CHECK-NEXT:    %g = memref.get_global @state : memref<4xf32>
// CHECK-NEXT:    %old_storage = memory.alloc_storage : !memory.storage<16>
// CHECK-NEXT:    %old = memory.alloc_tensor %old_storage[0] : !memory.storage<16> -> memref<4xf32>
// CHECK-NEXT:    memory.invoke @read ins(%g : memref<4xf32>) outs(%old : memref<4xf32>)
// CHECK:         memory.invoke @add ins(%old, %x : memref<4xf32>, memref<4xf32>) outs(%new : memref<4xf32>)
// CHECK-NEXT:    "memref.copy"(%new, %g) : (memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    func.return %new : memref<4xf32>

// -----

// Error: a tensor of a mutable global would be read in place, so a write
// to the global would change it.
"memref.global"() <{sym_name = "state", sym_visibility = "private", type = memref<4xf32>, initial_value}> : () -> ()
func.func @to_tensor_of_variable() -> tensor<4xf32> {
  %g = memref.get_global @state : memref<4xf32>
  %t = bufferization.to_tensor %g restrict : memref<4xf32> to tensor<4xf32>
  func.return %t : tensor<4xf32>
}

// CHECK-LABEL: bufferization.to_tensor %t: @state is not constant (its memory may be written); read it with a kernel call taking its memref

// -----

// Error: materialize_in_destination writes into a memref only (a tensor
// destination has no memory of its own).
func.func @write_into_tensor(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = bufferization.materialize_in_destination %x in %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: bufferization.materialize_in_destination of %x: its destination must be a memref
