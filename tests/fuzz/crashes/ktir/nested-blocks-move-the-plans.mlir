// attention: tests/test_ktir_attention.c's causal attention with an online softmax
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
module {
  func.func @attn(%q_ptr: index, %k_ptr: index, %v_ptr: index, %o_ptr: index, %ctx: index, %scale: f32)
      attributes {grid = [2]} {
    %p = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %t0 = arith.muli %p, %c2 : index
    %qv = ktdp.construct_memory_view %q_ptr, sizes: [4, 8, 64], strides: [512, 64, 1] {} : memref<4x8x64xf16>
    %kv = ktdp.construct_memory_view %k_ptr, sizes: [32, 64], strides: [64, 1] {} : memref<32x64xf16>
    %vv = ktdp.construct_memory_view %v_ptr, sizes: [32, 64], strides: [64, 1] {} : memref<32x64xf16>
    %ov = ktdp.construct_memory_view %o_ptr, sizes: [4, 8, 64], strides: [512, 64, 1] {} : memref<4x8x64xf16>
    %qt = ktdp.construct_access_tile %qv[%t0, %c4, %c0] {} : memref<4x8x64xf16> -> !ktdp.access_tile<2x4x64xindex>
    %q3 = ktdp.load %qt : !ktdp.access_tile<2x4x64xindex> -> tensor<2x4x64xf16>
    %q16 = tensor.collapse_shape %q3 [[0, 1], [2]] : tensor<2x4x64xf16> into tensor<8x64xf16>
    %q = arith.extf %q16 : tensor<8x64xf16> to tensor<8x64xf32>
    %bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %bits : i32 to f32
    %zero = arith.constant 0.0 : f32
    %m0 = tensor.splat %ninf : tensor<8xf32>
    %l0 = tensor.splat %zero : tensor<8xf32>
    %a0 = tensor.splat %zero : tensor<8x64xf32>
    %mf, %lf, %af = scf.for %j = %c0 to %c2 step %c1 iter_args(%mi = %m0, %li = %l0, %ai = %a0)
        -> (tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>) {
      %k0 = arith.muli %j, %c16 : index
      %kt = ktdp.construct_access_tile %kv[%k0, %c0] {} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>
      %vt = ktdp.construct_access_tile %vv[%k0, %c0] {} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>
      %k16 = ktdp.load %kt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
      %v16 = ktdp.load %vt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
      %ke = tensor.empty() : tensor<64x16xf16>
      %kT = linalg.transpose ins(%k16 : tensor<16x64xf16>) outs(%ke : tensor<64x16xf16>) permutation = [1, 0]
      %k = arith.extf %kT : tensor<64x16xf16> to tensor<64x16xf32>
      %v = arith.extf %v16 : tensor<16x64xf16> to tensor<16x64xf32>
      %sz = tensor.splat %zero : tensor<8x16xf32>
      %qk = linalg.matmul ins(%q, %k : tensor<8x64xf32>, tensor<64x16xf32>) outs(%sz : tensor<8x16xf32>) -> tensor<8x16xf32>
      %st = tensor.splat %scale : tensor<8x16xf32>
      %s = arith.mulf %st, %qk : tensor<8x16xf32>
      %se = tensor.empty() : tensor<8x16xf32>
      %sm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%s : tensor<8x16xf32>) outs(%se : tensor<8x16xf32>) {
        ^bb0(%x: f32, %o: f32):
          %r = linalg.index 0 : index
          %c = linalg.index 1 : index
          %r4 = arith.divui %r, %c4 : index
          %qp = arith.addi %t0, %r4 : index
          %qa = arith.addi %ctx, %qp : index
          %col = arith.addi %k0, %c : index
          %in = arith.cmpi ule, %col, %qa : index
          %y = arith.select %in, %x, %ninf : f32
          linalg.yield %y : f32
      } -> tensor<8x16xf32>
      %rm = linalg.reduce ins(%sm : tensor<8x16xf32>) outs(%m0 : tensor<8xf32>) dimensions = [1]
        (%a: f32, %b: f32) { %mx = arith.maximumf %a, %b : f32
 linalg.yield %mx : f32 }
      %me = tensor.empty() : tensor<8xf32>
      %mj = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
          ins(%mi, %rm : tensor<8xf32>, tensor<8xf32>) outs(%me : tensor<8xf32>) {
        ^bb0(%a: f32, %b: f32, %o: f32):
          %mx = arith.maximumf %a, %b : f32
          linalg.yield %mx : f32
      } -> tensor<8xf32>
      %pe = tensor.empty() : tensor<8x16xf32>
      %pj = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%sm, %mj : tensor<8x16xf32>, tensor<8xf32>) outs(%pe : tensor<8x16xf32>) {
        ^bb0(%x: f32, %m: f32, %o: f32):
          %d = arith.subf %x, %m : f32
          %e = math.exp %d : f32
          linalg.yield %e : f32
      } -> tensor<8x16xf32>
      %lj = linalg.reduce ins(%pj : tensor<8x16xf32>) outs(%l0 : tensor<8xf32>) dimensions = [1]
        (%a: f32, %b: f32) { %sum = arith.addf %a, %b : f32
 linalg.yield %sum : f32 }
      %ae = tensor.empty() : tensor<8xf32>
      %al = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
          ins(%mi, %mj : tensor<8xf32>, tensor<8xf32>) outs(%ae : tensor<8xf32>) {
        ^bb0(%a: f32, %b: f32, %o: f32):
          %d = arith.subf %a, %b : f32
          %e = math.exp %d : f32
          linalg.yield %e : f32
      } -> tensor<8xf32>
      %xe = tensor.empty() : tensor<8x64xf32>
      %as = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%ai, %al : tensor<8x64xf32>, tensor<8xf32>) outs(%xe : tensor<8x64xf32>) {
        ^bb0(%x: f32, %f: f32, %o: f64):
          %y = arith.mulf %x, %f : f32
          linalg.yield %y : f32
      } ->tile<2x4x64xindex> -> tensor<2x4x64xf16>
    %q16 = tensor.collapse_shape %q3 [[0, 1], [2]] : tensor<2x4x64xf16> into tensor<8x64xf16>
    %q = arith.extf %q16 : tensor<8x64xf16> to tensor<8x64xf32>
    %bits = arith.constant 0xFF800000 : i32
    %ninf = arith.bitcast %bits : i32 to f32
    %zero = arith.constant 0.0 : f32
    %m0 = tensor.splat %ninf : tensor<8xf32>
    %l0 = tensor.splat %zero : tensor<8xf32>
    %a0 = tensor.splat %zero : tensor<8x64xf32>
    %mf, %lf, %af = scf.for %j = %c0 to %c2 step %c1 iter_args(%mi = %m0, %li = %l0, %ai = %a0)
        -> (tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>) {
      %k0 = arith.muli %j, %c16 : index
      %kt = ktdp.construct_access_tile %kv[%k0, %c0] {} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>
      %vt = ktdp.construct_access_tile %vv[%k0, %c0] {} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>
      %k16 = ktdp.load %kt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
      %v16 = ktdp.load %vt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>
      %ke = tensor.empty() : tensor<64x16xf16>
      %kT = linalg.transpose ins(%k16 : tensor<16x64xf16>) outs(%ke : tensor<64x16xf16>) permutation = [1, 0]
      %k = arith.extf %kT : tensor<64x16xf16> to tensor<64x16xf32>
      %v = arith.extf %v16 : tensor<16x64xf16> to tensor<16x64xf32>
      %sz = tensor.splat %zero : tensor<8x16xf32>
      %qk = linalg.matmul ins(%q, %k : tensor<8x64xf32>, tensor<64x16xf32>) outs(%sz : tensor<8x16xf32>) -> tensor<8x16xf32>
      %st = tensor.splat %scale : tensor<8x16xf32>
      %s = arith.mulf %st, %qk : tensor<8x16xf32>
      %se = tensor.empty() : tensor<8x16xf32>
      %sm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%s : tensor<8x16xf32>) outs(%se : tensor<8x16xf32>) {
        ^bb0(%x: f32, %o: f32):
          %r = linalg.index 0 : index
          %c = linalg.index 1 : index
          %r4 = arith.divui %r, %c4 : index
          %qp = arith.addi %t0, %r4 : index
          %qa = arith.addi %ctx, %qp : index
          %col = arith.addi %k0, %c : index
          %in = arith.cmpi ule, %col, %qa : index
          %y = arith.select %in, %x, %ninf : f32
          linalg.yield %y : f32
      } -> tensor<8x16xf32>
      %rm = linalg.reduce ins(%sm : tensor<8x16xf32>) outs(%m0 : tensor<8xf32>) dimensions = [1]
        (%a: f32, %b: f32) { %mx = arith.maximumf %a, %b : f32
 linalg.yield %mx : f32 }
      %me = tensor.empty() : tensor<8xf32>
      %mj = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
          ins(%mi, %rm : tensor<8xf32>, tensor<8xf32>) outs(%me : tensor<8xf32>) {
        ^bb0(%a: f32, %b: f32, %o: f32):
          %mx = arith.maximumf %a, %b : f32
          linalg.yield %mx : f32
      } -> tensor<8xf32>
      %pe = tensor.empty() : tensor<8x16xf32>
      %pj = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%sm, %mj : tensor<8x16xf32>, tensor<8xf32>) outs(%pe : tensor<8x16xf32>) {
        ^bb0(%x: f32, %m: f32, %o: f32):
          %d = arith.subf %x, %m : f32
          %e = math.exp %d : f32
          linalg.yield %e : f32
      } -> tensor<8x16xf32>
      %lj = linalg.reduce ins(%pj : tensor<8x16xf32>) outs(%l0 : tensor<8xf32>) dimensions = [1]
        (%a: f32, %b: f32) { %sum = arith.addf %a, %b : f32
 linalg.yield %sum : f32 }
      %ae = tensor.empty() : tensor<8xf32>
      %al = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
          ins(%mi, %mj : tensor<8xf32>, tensor<8xf32>) outs(%ae : tensor<8xf32>) {
        ^bb0(%a: f32, %b: f32, %o: f32):
          %d = arith.subf %a, %b : f32
          %e = math.exp %d : f32
          linalg.yield %e : f32
      } -> tensor<8xf32>
      %xe = tensor.empty() : tensor<8x64xf32>
      %as = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%ai, %al : tensor<8x64xf32>, tensor<8xf32>) outs(%xe : tensor<8x64xf32>) {
        ^bb0(%x: f32, %f: f32, %o: f64):
          %y = arith.mulf %x, %f : f32
          linalg.yield %y : f32
      } -> tensor<8x64xf32>
      %an = linalg.matmul ins(%pj, %v : tensor<8x16xf32>, tensor<16x64xf32>) outs(%as : tensor<8x64xf32>) -> tensor<8x64xf32>
      %le = tensor.empty() : tensor<8xf32>
      %ln = linalg.generic {indexing_maps = [#id1, #id1, #id1, #id1], iterator_types = ["parallel"]}
          ins(%li, %al, %lj : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%le : tensor<8xf32>) {
        ^bb0(%l: f32, %f: f32, %n: f32, %o: f32):
          %y = arith.mulf %l, %f : f32
          %z = arith.addf %y, %n : f32
          linalg.yield %z : f32
      } -> tensor<8xf32>
      scf.yield %mj, %ln, %an : tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>
    }
    %oe = tensor.empty() : tensor<8x64xf32>
    %o = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%af, %lf : tensor<8x64xf32>, tensor<8xf32>) outs(%oe : tensor<8x64xf32>) {
      ^bb0(%x: f32, %l: f32, %u: f32):
        %y = arith.divf %x, %l : f32
        linalg.yield %y : f32
    } -> tensor<8x64xf32>
    %o16 = arith.truncf %o : tensor<8x64xf32> to tensor<8x64xf16>
   tensor<8x64xf32>
      %an = linalg.matmul ins(%pj, %v : tensor<8x16xf32>, tensor<16x64xf32>) outs(%as : tensor<8x64xf32>) -> tensor<8x64xf32>
      %le = tensor.empty() : tensor<8xf32>
      %ln = linalg.generic {indexing_maps = [#id1, #id1, #id1, #id1], iterator_types = ["parallel"]}
          ins(%li, %al, %lj : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%le : tensor<8xf32>) {
        ^bb0(%l: f32, %f: f32, %n: f32, %o: f32):
          %y = arith.mulf %l, %f : f32
          %z = arith.addf %y, %n : f32
          linalg.yield %z : f32
      } -> tensor<8xf32>
      scf.yield %mj, %ln, %an : tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>
    }
    %oe = tensor.empty() : tensor<8x64xf32>
    %o = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%af, %lf : tensor<8x64xf32>, tensor<8xf32>) outs(%oe : tensor<8x64xf32>) {
      ^bb0(%x: f32, %l: f32, %u: f32):
        %y = arith.divf %x, %l : f32
        linalg.yield %y : f32
    } -> tensor<8x64xf32>
    %o16 = arith.truncf %o : tensor<8x64xf32> to tensor<8x64xf16>
    %o3 = tensor.expand_shape %o16 [[0, 1], [2]] output_shape [2, 4, 64] : tensor<8x64xf16> into tensor<2x4x64xf16>
    %ot = ktdp.construct_access_tile %ov[%t0, %c4, %c0] {} : memref<4x8x64xf16> -> !ktdp.access_tile<2x4x64xindex>
    ktdp.store %o3, %ot : tensor<2x4x64xf16>, !ktdp.access_tile<2x4x64xindex>
    return
  }
}
