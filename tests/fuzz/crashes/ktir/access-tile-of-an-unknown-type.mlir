// Dynamic-shape exercise for ktdp.construct_distributed_memory_view, d1) -> (d0, d1)]>

module {
  func.func @distributed_view_copy_rowmerge_dynamic(
      %a0_ptr: index,
      %a1_ptr: index,
      %b_ptr: index,
      %s0_in: i32
  ) attributes {grid = [1]} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 63 : index
    %c128 = arith.constant 256 : index
    %s0 = arith.index_cast %s0_in : i32 to index

    // (1) Per-partition memory views with symbolic trailing dim (shared s0).
    %A0_view = ktdp.construct_memory_view %a0_ptr, sizes: [64, %s0], strides: [%s0, 1] {
      coordinate_set = #A0_set,
      memory_space = #ktdp.memory_space<global>
    } : memref<64x?xf16>

    %A1_view = ktdp.construct_memory_view %a1_ptr, sizes: [64, %s0], strides: [%s0, 1] {
      coordinate_set = #A1_set,
      memory_space = #ktdp.memory_space<global>
    } : memref<64x?xf16>

    // (1) Compose along the concrete row axis: 64 + 64 = 128 rows, s0 cols.
    %A_view = ktdp.construct_distributed_memory_view
        (%A0_view, %A1_view : memref<64x?xf16>, memref<64x?xf16>)
        : memref<128x?xf16>

    // (1) Output view B, 128 x s0.
    %B_view = ktdp.construct_memory_view %b_ptr, sizes: [128, %s0], strides: [%s0, 1] {
      coordinate_set = #B_set,
      memory_space = #ktvectordp.memory_space<global>
    } : memref<128x?xf16>

    // (2)+(3) Iterate: cols over the symbolic extent, rows over the two
    // partitions.  Concrete 64x16 tile appears only at the access level.
    scf.for %coff = %c0 to %s0 step %c16 {
      // Aligned tiles: each lands wholly inside one partition (exclude mode).
      scf.for %roff = %c0 to %c128 step %c64 {
        %A_tile = ktdp.construct_access_tile %A_view[%roff, %coff] {
          access_tile_set = #tile, access_tile_order = #order
        } : memref<128x?xf16> -> !ktdp.access_tile<64x16xindex>

        %B_tile = ktdp.construct_access_tile %B_view[%roff, %coff] {
          access_tile_set = #tile, access_tile_order = #order
        } : memref<128x?xf16> -> !ktdp.access_tile<64x16xindex>

        %data = ktdp.load %A_tile : !ktdp.access_tile<64x16xindex> -> tensor<64x16xf16>
        ktdp.store %data, %B_tile : tensor<64x16xf16>, !ktdp.access_tile<64x16xindex>
      }

      // Straddle tile: rows[32,96) cross the row-64 boundary, so both
      // partitions participate and routing splits the tile across them.
      %As_tile = ktdp.construct_access_tile %A_view[%c32, %coff] {
        access_tile_set = #tile, access_tile_order = #order
      } : memref<128x?xf16> -> !ktdp.access_tile<64x16xindex>

      %Bs_tile = ktdp.construct_access_tile %B_view[%c32, %coff] {
        access_tile_set = #tile, access_tile_order = #order
      } : memref<128x?xf16> -> linalg.reducetile<64x13xindex>

      %sdata = ktdp.load %As_tile : !ktdp.access_tile<64x16xindex> -> tensor<64x16xf16>
      ktdp.store %sdata, %Bs_tile : tensor<64x16xf16>, !ktdp.access_tile<64x16xindex>
    }

    return
  }
}
