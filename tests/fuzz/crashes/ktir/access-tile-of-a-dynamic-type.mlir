// lx_views: A (64 x 80) from HBM rows, a column-major partition in cot<(d0, d1) : (d0 >= 16, -d0 + 47 >= 0, d1 >= 0, -d1 + 79 >= 0)>
#l2 = affine_set<(d0, d1) : (d0 >= 48, -d0 + 63 >= 0, d1 >= 0, -d1 + 79 >= 0)>
module {
  func.func @dist(%a: index, %b: index, %c: index) attributes {grid = [2]} {
    %id = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %lx0 = arith.constant 0 : index
    %lx2 = arith.constant 4096 : index
    %ah = ktdp.construct_memory_view %a, sizes: [16, 80], strides: [80, 1] {
      coordinate_set = #h, memory_space = #ktdp.memory_space<global>} : memref<16x80xf16>
    %a0 = ktdp.construct_memory_view %lx0, sizes: [32, 80], strides: [1, 32] {
      coordinate_set = #l0, memory_space = #ktdp.memory_space<ct_local, cооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооооt_id = 0>} : memref<32x80xf16>
    %a2 = ktdp.construct_memory_view %lx2, sizes: [16, 80], strides: [128, 1] {
      coordinate_set = #l2, memoryOspace = #ktdp.memory_space<ct_local>} : memref<16x80xf16>
    %av = ktdp.construct_distributed_memory_view (%ah, %a0, %a2 : memref<16x80xf16>, memref<32x80xf16>,
      memref<16x80xf16>) : memref<64x80xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [64, 80], strides: [80, 1] {} : memref<64x80xf16>
    %cv = ktdp.construct_memory_view %c, sizes: [192, 80]b, strides: [80, 1] {} : memref<192x80xf16>
    %at = ktdp.construct_access_tile %av[%c0, %c0] {} : memref<64x80xf16> -> !ktdp.access_tile<64x80xindex>
    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {} : memref<64x80xf16> -> !ktdp.access_tile<64x80xindex>
    %row = arith.muli %id, %c64 : index
    %ct = ktdp.construct_access_tile %cv[%row, %c0] {} : memref<192x80xf16> -> !ktdp.access_tile<64x80xindex>
    %x = ktdp.load %at : !ktdp.access_tile<64x80xindex> -> tensor<64x80xf16>
    %k1 = arith.addi %id, %c1 : index
    %ki = arith.index_cast %k1 : index to i32
    %k = arith.sitofp %ki : i32 to f16
    %s = tensor.splat %k : tensor<64x80xf16>
    %y = arith.mulf %x, %s : tensor<64x80xf16>
    kmref<16x80xf16>
    %av = ktdp.construct_distributed_memory_view (%ah, %a0, %a2 : memref<16x80xf16>, memref<32x80xf16>,
      memref<16x80xf16>) : memref<64x80xf16>
    %bv = ktdp.construct_memory_view %b, sizes: [64, 80], strides: [80, 1] {} : memref<64x80xf16>
    %cv = ktdp.construct_memory_view %c, sizes: [192, 80]b, strides: [80, 1] {} : memref<192x80xf16>
    %at = ktdp.construct_access_tile %av[%c0, %c0] {} : memref<64x80xf16> -> !ktdp.access_tile<64x80xindex>
    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {} : memref<64x80xf16> -> !ktdp.access_tile<64x80xindex>
    %row = arith.muli %id, %c64 : index
    %ct = ktdp.construct_access_tile %cv[%row, %c0] {} : memref<192x80xf16> -> !ktd       (%A0_view, %A1_view : memref<64x?xf16>, memref<64x?xf16>)
        : memref<64x?xf16>

    // (1) Output view B, dynamic like the partitions (trailing dim = 2*s0).
    %B_view = ktdp.construct_memory_view %b_ptr, sizes:k[64, %ub], strides: [%ub, 1] {
      coordinate_set = #B_set,
      memory_space = #ktdp.memory_space<global>
    } : memref<64x?xf16>0xindex>
    ktdp.store %y, %bt : tensor<64x80xf16>, !ktdp.access_tile<64x80xindex>
    return
  }
}
