// rows: y = exp(a + b) - rowmax(a + b)
module {
  func.func @rows(%a_ptr: index, %b_ptr: index, %y_ptr: index, %BLOCK: index) attributes {grid = [4]} {
    %id = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    %ninf = arith.constant 0xFC00 : f16
    %base = arith.muli %id, %c2 : index
    %a = ktdp.construct_memory_view %a_ptr, sizes: [64, 128], strides: [128, 1] {
      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
      memory_space = #ktdp.memory_space<global>} : memref<64x128xf16>
    %b = ktdp.construct_memory_view %b_ptr, sizes: [64, 128], strides: [128, 1] {
      memory_space = #ktdp.memory_space<global>} : memref<64x128xf16>
    %y = ktdp.construct_memory_view %y_ptr, sizes: [64, 128], strides: [128, 1] {
      memory_space = #ktdp.memory_space<global>} : memref<64x128xf16>
    scf.for %i = %c0 to %c2 step %c1 {
      %blk = arith.addi %base, %i : index
      %row = arith.muli %blk, %BLOCK : index
      %ta = ktdp.construct_access_tile %a[%row, %c0] {
        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>,
        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x128xf16> -> !ktdp.access_tile<8x128xindex>
      %tb = ktdp.construct_access_tile %b[%row, %c0] {} : memref<64x128xf16> -> !ktdp.access_tile<8x128xindex>
      %ty = ktdp.construct_access_tile %y[%row, %c0] {} : memref<64x128xf16> -> !ktdp.access_tile<8x128xindex>
      %xa = ktdp.load %ta : !ktdp.access_tile<8x128xindex> -> tensor<8x128xf16>
      %xb = ktdp.load %tb : !ktdp.access_tile<8x128xindex> -> tensor<8x128xf16>
      %s = tensor.empty() : tensor<8x128xf16>
      %sum = linalg.add ins(%xa, %xb : tensor<8x128xf16>, tensor<8x128xf16>)
                        outs(%s : tensor<8x128xf16>) -> tensor<8x128xf16>
      %e = math.exp %sum : tensor<8x128xf16>
      %init = tensor.splat %ninf : tensor<8xf16>
      %mx = linalg.reduce { arith.maximumf } ins(%sum : tensor<8x128xf16>) outs(%init : tensor<8xf16>)
        dimensions = [1]
      %k = arith.constant 3 : index
      %m3 = tensor.extract %mx[%k] : tensor<8xf16>
      %mb = tensor.splat %m3 : tensor<8x128xf16>
      %out = arith.subf %e, %mb : tensor<8x128xf16>
      ktdp.store %out, %ty : tensor<8x128xf16>, !ktdp.access_tile<8x128xindex>
      scf.yield
    }
    return
  }
}
