// A parametric plan of dynamic_batch.onnx (N in 1..64), written as
// usmp{parametric=true} writes one: %h1 (64*N bytes) at slot 0, %y (16*N) at
// slot 1, both at offset 0 (their lifetimes do not meet), %h6 (16*N) at slot 2
// above both: at N its offset is align(64*N, 64) = 64*N and the pool takes 80*N
// bytes (80 at N = 1, 5120 at N = 64, the static plan's size).
builtin.module {
  memory.pool @workspace_cpu targets ["cpu"] used 5120
  "memref.global"() <{sym_name = "w1", type = memref<8x16xf32>, initial_value, sym_visibility = "private", constant}> {memory.onnx.name = "w1"} : () -> ()
  "memref.global"() <{sym_name = "b1", type = memref<16xf32>, initial_value, sym_visibility = "private", constant}> {memory.onnx.name = "b1"} : () -> ()
  "memref.global"() <{sym_name = "w2", type = memref<16x4xf32>, initial_value, sym_visibility = "private", constant}> {memory.onnx.name = "w2"} : () -> ()
  "memref.global"() <{sym_name = "b2", type = memref<4xf32>, initial_value, sym_visibility = "private", constant}> {memory.onnx.name = "b2"} : () -> ()
  func.func @main(%x: memref<?x8xf32>) -> memref<?x4xf32> attributes {memory.onnx.inputs = ["x"], memory.onnx.outputs = ["y"], memory.dim_ranges = {N = array<i64: 1, 64>}, memory.dim_symbols = {N = array<i64: 0, 0>}} {
    %w1 = memref.get_global @w1 : memref<8x16xf32>
    %b1 = memref.get_global @b1 : memref<16xf32>
    %w2 = memref.get_global @w2 : memref<16x4xf32>
    %b2 = memref.get_global @b2 : memref<4xf32>
    %h1_dim0 = func.call @onnx.MatMul.shape(%x, %w1) : (memref<?x8xf32>, memref<8x16xf32>) -> index
    %0 = arith.constant 64 : index
    %h1_bytes = arith.muli %h1_dim0, %0 : index
    %h1_storage = memory.alloc_storage(%h1_bytes) max 4096 at @workspace_cpu[0] {memory.reserve = "64*N", memory.slot = 0 : i64, memory.above = array<i64>} : !memory.storage<?>
    %h1 = memory.alloc_tensor %h1_storage[0](%h1_dim0) : !memory.storage<?> -> memref<?x16xf32>
    memory.invoke @onnx.MatMul ins(%x, %w1 : memref<?x8xf32>, memref<8x16xf32>) outs(%h1 : memref<?x16xf32>)
    %h2_dim0 = func.call @onnx.Add.shape(%h1, %b1) : (memref<?x16xf32>, memref<16xf32>) -> index
    %h2 = memory.alloc_tensor %h1_storage[0](%h2_dim0) {memory.inplace_of = 0 : i64} : !memory.storage<?> -> memref<?x16xf32>
    memory.invoke @onnx.Add ins(%h1, %b1 : memref<?x16xf32>, memref<16xf32>) outs(%h2 : memref<?x16xf32>)
    %h3_dim0 = func.call @onnx.Relu.shape(%h2) : (memref<?x16xf32>) -> index
    %h3 = memory.alloc_tensor %h1_storage[0](%h3_dim0) {memory.inplace_of = 0 : i64} : !memory.storage<?> -> memref<?x16xf32>
    memory.invoke @onnx.Relu ins(%h2 : memref<?x16xf32>) outs(%h3 : memref<?x16xf32>)
    %h4_dim0 = func.call @onnx.Reshape.shape(%h3) : (memref<?x16xf32>) -> index
    %h4 = memref.reinterpret_cast %h3 to offset: [0], sizes: [%h4_dim0, 4, 4], strides: [16, 4, 1] : memref<?x16xf32> to memref<?x4x4xf32>
    %h5_dim0 = func.call @onnx.Flatten.shape(%h4) : (memref<?x4x4xf32>) -> index
    %h5 = memref.reinterpret_cast %h4 to offset: [0], sizes: [%h5_dim0, 16], strides: [16, 1] : memref<?x4x4xf32> to memref<?x16xf32>
    %h6_dim0 = func.call @onnx.MatMul_1.shape(%h5, %w2) : (memref<?x16xf32>, memref<16x4xf32>) -> index
    %1 = arith.constant 16 : index
    %h6_bytes = arith.muli %h6_dim0, %1 : index
    %h6_storage = memory.alloc_storage(%h6_bytes) max 1024 at @workspace_cpu[4096] {memory.reserve = "16*N", memory.slot = 2 : i64, memory.above = array<i64: 0, 1>} : !memory.storage<?>
    %h6 = memory.alloc_tensor %h6_storage[0](%h6_dim0) : !memory.storage<?> -> memref<?x4xf32>
    memory.invoke @onnx.MatMul_1 ins(%h5, %w2 : memref<?x16xf32>, memref<16x4xf32>) outs(%h6 : memref<?x4xf32>)
    memory.kill %h3 : memref<?x16xf32>
    memory.kill %h1_storage : !memory.storage<?>
    %h7_dim0 = func.call @onnx.Add_1.shape(%h6, %b2) : (memref<?x4xf32>, memref<4xf32>) -> index
    %h7 = memory.alloc_tensor %h6_storage[0](%h7_dim0) {memory.inplace_of = 0 : i64} : !memory.storage<?> -> memref<?x4xf32>
    memory.invoke @onnx.Add_1 ins(%h6, %b2 : memref<?x4xf32>, memref<4xf32>) outs(%h7 : memref<?x4xf32>)
    %y_dim0 = func.call @onnx.Softmax.shape(%h7) : (memref<?x4xf32>) -> index
    %2 = arith.constant 16 : index
    %y_bytes = arith.muli %y_dim0, %2 : index
    %y_storage = memory.alloc_storage(%y_bytes) max 1024 at @workspace_cpu[0] {memory.reserve = "16*N", memory.slot = 1 : i64, memory.above = array<i64>} : !memory.storage<?>
    %y = memory.alloc_tensor %y_storage[0](%y_dim0) : !memory.storage<?> -> memref<?x4xf32>
    memory.invoke @onnx.Softmax ins(%h7 : memref<?x4xf32>) outs(%y : memref<?x4xf32>)
    memory.kill %h7 : memref<?x4xf32>
    memory.kill %h6_storage : !memory.storage<?>
    func.return %y : memref<?x4xf32>
  }
  func.func private @onnx.MatMul(memref<?x8xf32>, memref<8x16xf32>, memref<?x16xf32>) -> () attributes {memory.onnx.op_type = "MatMul", memory.onnx.domain = "", memory.onnx.opset = 13 : i64, memory.shape_fn = @onnx.MatMul.shape}
  func.func private @onnx.MatMul.shape(memref<?x8xf32>, memref<8x16xf32>) -> index
  func.func private @onnx.Add(memref<?x16xf32>, memref<16xf32>, memref<?x16xf32>) -> () attributes {memory.onnx.op_type = "Add", memory.onnx.domain = "", memory.onnx.opset = 13 : i64, memory.inplace = array<i64: 0, 0>, memory.shape_fn = @onnx.Add.shape}
  func.func private @onnx.Add.shape(memref<?x16xf32>, memref<16xf32>) -> index
  func.func private @onnx.Relu(memref<?x16xf32>, memref<?x16xf32>) -> () attributes {memory.onnx.op_type = "Relu", memory.onnx.domain = "", memory.onnx.opset = 13 : i64, memory.inplace = array<i64: 0, 0>, memory.shape_fn = @onnx.Relu.shape}
  func.func private @onnx.Relu.shape(memref<?x16xf32>) -> index
  func.func private @onnx.Reshape(memref<?x16xf32>, memref<?x4x4xf32>) -> () attributes {memory.onnx.op_type = "Reshape", memory.onnx.domain = "", memory.onnx.opset = 13 : i64, memory.view, memory.shape_fn = @onnx.Reshape.shape}
  func.func private @onnx.Reshape.shape(%source: memref<?x16xf32>) -> index {
    %c0 = arith.constant 0 : index
    %dim0 = memref.dim %source, %c0 : memref<?x16xf32>
    func.return %dim0 : index
  }
  func.func private @onnx.Flatten(memref<?x4x4xf32>, memref<?x16xf32>) -> () attributes {memory.onnx.op_type = "Flatten", memory.onnx.domain = "", memory.onnx.opset = 13 : i64, memory.onnx.axis = 1 : i64, memory.view, memory.shape_fn = @onnx.Flatten.shape}
  func.func private @onnx.Flatten.shape(%source: memref<?x4x4xf32>) -> index {
    %c0 = arith.constant 0 : index
    %dim0 = memref.dim %source, %c0 : memref<?x4x4xf32>
    func.return %dim0 : index
  }
  func.func private @onnx.MatMul_1(memref<?x16xf32>, memref<16x4xf32>, memref<?x4xf32>) -> () attributes {memory.onnx.op_type = "MatMul", memory.onnx.domain = "", memory.onnx.opset = 13 : i64, memory.shape_fn = @onnx.MatMul_1.shape}
  func.func private @onnx.MatMul_1.shape(memref<?x16xf32>, memref<16x4xf32>) -> index
  func.func private @onnx.Add_1(memref<?x4xf32>, memref<4xf32>, memref<?x4xf32>) -> () attributes {memory.onnx.op_type = "Add", memory.onnx.domain = "", memory.onnx.opset = 13 : i64, memory.inplace = array<i64: 0, 0>, memory.shape_fn = @onnx.Add_1.shape}
  func.func private @onnx.Add_1.shape(memref<?x4xf32>, memref<4xf32>) -> index
  func.func private @onnx.Softmax(memref<?x4xf32>, memref<?x4xf32>) -> () attributes {memory.onnx.op_type = "Softmax", memory.onnx.domain = "", memory.onnx.opset = 13 : i64, memory.onnx.axis = -1 : i64, memory.shape_fn = @onnx.Softmax.shape}
  func.func private @onnx.Softmax.shape(memref<?x4xf32>) -> index
}

