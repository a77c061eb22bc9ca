/* Tests of the MLIR parser (mlir/) and the KTIR front end (ktir/): parsing,
 * one-line errors and no crash on damaged text, and KTIR programs written
 * here compiled, run on the simulator and checked against values computed
 * in the test. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktir.h"
#include "mlir.h"
#include "rt.h"
#include "testutil.h"

static chip_config cfg4;

/* A 4-core program: each core loads 16 rows of a 64x128 fp16 matrix, adds
 * the other input, takes exp, subtracts each row's max, and stores it; a
 * loop over 2 blocks of 8 rows with an index computed from the core id. */
static const char *rows_prog =
    "// rows: y = exp(a + b) - rowmax(a + b)\n"
    "module {\n"
    "  func.func @rows(%a_ptr: index, %b_ptr: index, %y_ptr: index, %BLOCK: index) attributes {grid = [4]} {\n"
    "    %id = ktdp.get_compute_tile_id : index\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %c2 = arith.constant 2 : index\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %ninf = arith.constant 0xFC00 : f16\n"
    "    %base = arith.muli %id, %c2 : index\n"
    "    %a = ktdp.construct_memory_view %a_ptr, sizes: [64, 128], strides: [128, 1] {\n"
    "      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 63 >= 0, d1 >= 0, -d1 + 127 >= 0)>,\n"
    "      memory_space = #ktdp.memory_space<global>} : memref<64x128xf16>\n"
    "    %b = ktdp.construct_memory_view %b_ptr, sizes: [64, 128], strides: [128, 1] {\n"
    "      memory_space = #ktdp.memory_space<global>} : memref<64x128xf16>\n"
    "    %y = ktdp.construct_memory_view %y_ptr, sizes: [64, 128], strides: [128, 1] {\n"
    "      memory_space = #ktdp.memory_space<global>} : memref<64x128xf16>\n"
    "    scf.for %i = %c0 to %c2 step %c1 {\n"
    "      %blk = arith.addi %base, %i : index\n"
    "      %row = arith.muli %blk, %BLOCK : index\n"
    "      %ta = ktdp.construct_access_tile %a[%row, %c0] {\n"
    "        access_tile_set = affine_set<(d0, d1) : (d0 >= 0, -d0 + 7 >= 0, d1 >= 0, -d1 + 127 >= 0)>,\n"
    "        access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<64x128xf16> -> !ktdp.access_tile<8x128xindex>\n"
    "      %tb = ktdp.construct_access_tile %b[%row, %c0] {} : memref<64x128xf16> -> !ktdp.access_tile<8x128xindex>\n"
    "      %ty = ktdp.construct_access_tile %y[%row, %c0] {} : memref<64x128xf16> -> !ktdp.access_tile<8x128xindex>\n"
    "      %xa = ktdp.load %ta : !ktdp.access_tile<8x128xindex> -> tensor<8x128xf16>\n"
    "      %xb = ktdp.load %tb : !ktdp.access_tile<8x128xindex> -> tensor<8x128xf16>\n"
    "      %s = tensor.empty() : tensor<8x128xf16>\n"
    "      %sum = linalg.add ins(%xa, %xb : tensor<8x128xf16>, tensor<8x128xf16>)\n"
    "                        outs(%s : tensor<8x128xf16>) -> tensor<8x128xf16>\n"
    "      %e = math.exp %sum : tensor<8x128xf16>\n"
    "      %init = tensor.splat %ninf : tensor<8xf16>\n"
    "      %mx = linalg.reduce { arith.maximumf } ins(%sum : tensor<8x128xf16>) outs(%init : tensor<8xf16>)\n"
    "        dimensions = [1]\n"
    "      %k = arith.constant 3 : index\n"
    "      %m3 = tensor.extract %mx[%k] : tensor<8xf16>\n"
    "      %mb = tensor.splat %m3 : tensor<8x128xf16>\n"
    "      %out = arith.subf %e, %mb : tensor<8x128xf16>\n"
    "      ktdp.store %out, %ty : tensor<8x128xf16>, !ktdp.access_tile<8x128xindex>\n"
    "      scf.yield\n"
    "    }\n"
    "    return\n"
    "  }\n"
    "}\n";

/* 4 tiles: each multiplies its row of a (4x64) by b (64x64) on the PT, the
 * products are summed over the ring, tile 0 stores the sum. */
static const char *ring_prog =
    "#tiles = affine_set<(i)[g] : (i - 4*g >= 0, -i + 4*g + 3 >= 0)>\n"
    "module {\n"
    "  func.func @mm_allreduce(%a: index, %b: index, %out: index) attributes {grid = [4]} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %id = ktdp.get_compute_tile_id : index\n"
    "    %av = ktdp.construct_memory_view %a, sizes: [4, 64], strides: [64, 1] {} : memref<4x64xf16>\n"
    "    %bv = ktdp.construct_memory_view %b, sizes: [64, 64], strides: [64, 1] {} : memref<64x64xf16>\n"
    "    %ov = ktdp.construct_memory_view %out, sizes: [1, 64], strides: [64, 1] {} : memref<1x64xf16>\n"
    "    %at = ktdp.construct_access_tile %av[%id, %c0] {} : memref<4x64xf16> -> !ktdp.access_tile<1x64xindex>\n"
    "    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {} : memref<64x64xf16> -> !ktdp.access_tile<64x64xindex>\n"
    "    %x = ktdp.load %at : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>\n"
    "    %w = ktdp.load %bt : !ktdp.access_tile<64x64xindex> -> tensor<64x64xf16>\n"
    "    %e = tensor.empty() : tensor<1x64xf16>\n"
    "    %p = linalg.matmul ins(%x, %w : tensor<1x64xf16>, tensor<64x64xf16>) outs(%e : tensor<1x64xf16>) -> tensor<1x64xf16>\n"
    "    %f = ktdp.inter_tile_produce producer_tiles_per_group = #tiles : tensor<1x64xf16> -> !ktdp.tile_future<tensor<1x64xf16>> {\n"
    "      ^bb0(%g: index):\n"
    "        ktdp.yield_partial %p : tensor<1x64xf16>\n"
    "    }\n"
    "    %s = ktdp.inter_tile_reduce(%f) consumer_tiles_per_group = #tiles : !ktdp.tile_future<tensor<1x64xf16>> -> tensor<1x64xf16> {\n"
    "      ^bb0(%l: tensor<1x64xf16>, %r: tensor<1x64xf16>):\n"
    "        %sum = arith.addf %l, %r : tensor<1x64xf16>\n"
    "        ktdp.yield_reduced %sum : tensor<1x64xf16>\n"
    "    }\n"
    "    %first = arith.cmpi eq, %id, %c0 : index\n"
    "    scf.if %first {\n"
    "      %ot = ktdp.construct_access_tile %ov[%c0, %c0] {} : memref<1x64xf16> -> !ktdp.access_tile<1x64xindex>\n"
    "      ktdp.store %s, %ot : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>\n"
    "    }\n"
    "    return\n"
    "  }\n"
    "}\n";

/* fp32 on a view whose size comes at run time: the 128-value tile is clipped to n. */
static const char *dyn_prog =
    "#set = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>\n"
    "module {\n"
    "  func.func @scale(%x: index, %y: index, %n: i32) attributes {grid = [1]} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %nn = arith.index_cast %n : i32 to index\n"
    "    %two = arith.constant 2.5 : f32\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [%nn], strides: [1] {coordinate_set = #set} : memref<?xf32>\n"
    "    %yv = ktdp.construct_memory_view %y, sizes: [%nn], strides: [1] {coordinate_set = #set} : memref<?xf32>\n"
    "    %xt = ktdp.construct_access_tile %xv[%c0] {} : memref<?xf32> -> !ktdp.access_tile<128xindex>\n"
    "    %yt = ktdp.construct_access_tile %yv[%c0] {} : memref<?xf32> -> !ktdp.access_tile<128xindex>\n"
    "    %a = ktdp.load %xt : !ktdp.access_tile<128xindex> -> tensor<128xf32>\n"
    "    %s = tensor.splat %two : tensor<128xf32>\n"
    "    %b = arith.mulf %a, %s : tensor<128xf32>\n"
    "    ktdp.store %b, %yt : tensor<128xf32>, !ktdp.access_tile<128xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* Cores that store disjoint parts of one stick: on a 2 x 2 grid each core
 * stores an 8 x 32 block of y = 2x (two cores per 64-value row), and one
 * row sum per row into m (4 cores per stick, lanes 16..39 nobody stores).
 * x, y and m share one HBM tensor (addresses as --arg). */
static const char *halves_prog =
    "module {\n"
    "  func.func @halves(%x: index, %y: index, %m: index) attributes {grid = [2, 2]} {\n"
    "    %pm, %pn = ktdp.get_compute_tile_id : index, index\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %c2 = arith.constant 2 : index\n"
    "    %c4 = arith.constant 4 : index\n"
    "    %c8 = arith.constant 8 : index\n"
    "    %c16 = arith.constant 16 : index\n"
    "    %c32 = arith.constant 32 : index\n"
    "    %two = arith.constant 2.0 : f16\n"
    "    %zero = arith.constant 0.0 : f16\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [16, 64], strides: [64, 1] {} : memref<16x64xf16>\n"
    "    %yv = ktdp.construct_memory_view %y, sizes: [16, 64], strides: [64, 1] {} : memref<16x64xf16>\n"
    "    %mv = ktdp.construct_memory_view %m, sizes: [40], strides: [1] {} : memref<40xf16>\n"
    "    %r0 = arith.muli %pm, %c8 : index\n"
    "    %col = arith.muli %pn, %c32 : index\n"
    "    %xt = ktdp.construct_access_tile %xv[%r0, %col] {} : memref<16x64xf16> -> !ktdp.access_tile<8x32xindex>\n"
    "    %yt = ktdp.construct_access_tile %yv[%r0, %col] {} : memref<16x64xf16> -> !ktdp.access_tile<8x32xindex>\n"
    "    %a = ktdp.load %xt : !ktdp.access_tile<8x32xindex> -> tensor<8x32xf16>\n"
    "    %s = tensor.splat %two : tensor<8x32xf16>\n"
    "    %b = arith.mulf %a, %s : tensor<8x32xf16>\n"
    "    ktdp.store %b, %yt : tensor<8x32xf16>, !ktdp.access_tile<8x32xindex>\n"
    "    %t = arith.muli %pn, %c2 : index\n"
    "    %id = arith.addi %pm, %t : index\n"
    "    scf.for %i = %id to %c16 step %c4 {\n"
    "      %rt = ktdp.construct_access_tile %xv[%i, %c0] {} : memref<16x64xf16> -> !ktdp.access_tile<1x64xindex>\n"
    "      %row = ktdp.load %rt : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>\n"
    "      %init = tensor.splat %zero : tensor<1xf16>\n"
    "      %sum = linalg.reduce { arith.addf } ins(%row : tensor<1x64xf16>) outs(%init : tensor<1xf16>) dimensions = [1]\n"
    "      %mt = ktdp.construct_access_tile %mv[%i] {} : memref<40xf16> -> !ktdp.access_tile<1xindex>\n"
    "      ktdp.store %sum, %mt : tensor<1xf16>, !ktdp.access_tile<1xindex>\n"
    "      scf.yield\n"
    "    }\n"
    "    return\n"
    "  }\n"
    "}\n";

/* SiLU written out as ktir-cpu's ffn_swiglu writes it: x / (1 + exp(-x))
 * as x * (1 / (1 + exp(-x))), with the constant ONE. */
static const char *silu_prog =
    "module {\n"
    "  func.func @silu(%x: index, %y: index) attributes {grid = [1]} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [2, 64], strides: [64, 1] {} : memref<2x64xf16>\n"
    "    %yv = ktdp.construct_memory_view %y, sizes: [2, 64], strides: [64, 1] {} : memref<2x64xf16>\n"
    "    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {} : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>\n"
    "    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {} : memref<2x64xf16> -> !ktdp.access_tile<2x64xindex>\n"
    "    %a = ktdp.load %xt : !ktdp.access_tile<2x64xindex> -> tensor<2x64xf16>\n"
    "    %n = arith.negf %a : tensor<2x64xf16>\n"
    "    %e = math.exp %n : tensor<2x64xf16>\n"
    "    %one = arith.constant dense<ONE> : tensor<2x64xf16>\n"
    "    %d = arith.addf %one, %e : tensor<2x64xf16>\n"
    "    %s = arith.divf %one, %d : tensor<2x64xf16>\n"
    "    %b = arith.mulf %a, %s : tensor<2x64xf16>\n"
    "    ktdp.store %b, %yt : tensor<2x64xf16>, !ktdp.access_tile<2x64xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* An embedding lookup on 2 cores: out[r] = table[ids[r]] for the two rows
 * r of each core, table and out of rank 3 (each entry 2 rows of 64). */
static const char *embed_prog =
    "module {\n"
    "  func.func @embed(%table: index, %ids: index, %out: index) attributes {grid = [2]} {\n"
    "    %c = ktdp.get_compute_tile_id : index\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %c2 = arith.constant 2 : index\n"
    "    %row = arith.muli %c, %c2 : index\n"
    "    %tv = ktdp.construct_memory_view %table, sizes: [16, 2, 64], strides: [128, 64, 1] {} : memref<16x2x64xf16>\n"
    "    %iv = ktdp.construct_memory_view %ids, sizes: [4], strides: [1] {} : memref<4xi32>\n"
    "    %ov = ktdp.construct_memory_view %out, sizes: [4, 2, 64], strides: [128, 64, 1] {} : memref<4x2x64xf16>\n"
    "    %tt = ktdp.construct_indirect_access_tile\n"
    "        intermediate_variables(%i, %j, %k)\n"
    "        %tv[ind(%iv[%row + %i]), (%j), (%k)] {}\n"
    "        : memref<16x2x64xf16>, memref<4xi32> -> !ktdp.access_tile<2x2x64xindex>\n"
    "    %x = ktdp.load %tt : !ktdp.access_tile<2x2x64xindex> -> tensor<2x2x64xf16>\n"
    "    %ot = ktdp.construct_access_tile %ov[%row, %c0, %c0] {} : memref<4x2x64xf16> -> !ktdp.access_tile<2x2x64xindex>\n"
    "    ktdp.store %x, %ot : tensor<2x2x64xf16>, !ktdp.access_tile<2x2x64xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* y[m, k] = x[r[m, k], c[m, k]]: both dimensions indirect, the index
 * tensors integers at constant addresses (tensors hbm_int_100 and
 * hbm_int_300), rows of two sticks, 40 indices a row (two groups of 32). */
static const char *elem_prog =
    "module {\n"
    "  func.func @elem(%x: index, %y: index) attributes {grid = [1]} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %ra = arith.constant 100 : index\n"
    "    %ca = arith.constant 300 : index\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [8, 128], strides: [128, 1] {} : memref<8x128xf16>\n"
    "    %rv = ktdp.construct_memory_view %ra, sizes: [4, 40], strides: [40, 1] {} : memref<4x40xi32>\n"
    "    %cv = ktdp.construct_memory_view %ca, sizes: [4, 40], strides: [40, 1] {} : memref<4x40xi32>\n"
    "    %yv = ktdp.construct_memory_view %y, sizes: [4, 40], strides: [40, 1] {} : memref<4x40xf16>\n"
    "    %xt = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k)\n"
    "        %xv[ind(%rv[%m, %k]), ind(%cv[%m, %k])] {}\n"
    "        : memref<8x128xf16>, memref<4x40xi32>, memref<4x40xi32> -> !ktdp.access_tile<4x40xindex>\n"
    "    %v = ktdp.load %xt : !ktdp.access_tile<4x40xindex> -> tensor<4x40xf16>\n"
    "    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {} : memref<4x40xf16> -> !ktdp.access_tile<4x40xindex>\n"
    "    ktdp.store %v, %yt : tensor<4x40xf16>, !ktdp.access_tile<4x40xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* y[r[m, k], c[m, k]] = x[m, k]: elem_prog's store the other way round,
 * the index tensors again hbm_int_100 and hbm_int_300. */
static const char *scatter_prog =
    "module {\n"
    "  func.func @scatter(%x: index, %y: index) attributes {grid = [1]} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %ra = arith.constant 100 : index\n"
    "    %ca = arith.constant 300 : index\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [4, 40], strides: [40, 1] {} : memref<4x40xf16>\n"
    "    %rv = ktdp.construct_memory_view %ra, sizes: [4, 40], strides: [40, 1] {} : memref<4x40xi32>\n"
    "    %cv = ktdp.construct_memory_view %ca, sizes: [4, 40], strides: [40, 1] {} : memref<4x40xi32>\n"
    "    %yv = ktdp.construct_memory_view %y, sizes: [8, 128], strides: [128, 1] {} : memref<8x128xf16>\n"
    "    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {} : memref<4x40xf16> -> !ktdp.access_tile<4x40xindex>\n"
    "    %v = ktdp.load %xt : !ktdp.access_tile<4x40xindex> -> tensor<4x40xf16>\n"
    "    %yt = ktdp.construct_indirect_access_tile intermediate_variables(%m, %k)\n"
    "        %yv[ind(%rv[%m, %k]), ind(%cv[%m, %k])] {}\n"
    "        : memref<8x128xf16>, memref<4x40xi32>, memref<4x40xi32> -> !ktdp.access_tile<4x40xindex>\n"
    "    ktdp.store %v, %yt : tensor<4x40xf16>, !ktdp.access_tile<4x40xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* y = transpose(x); z = x - broadcast(rowmax(x)) along dimension 1. */
static const char *tr_prog =
    "module {\n"
    "  func.func @tr(%x: index, %y: index, %z: index) attributes {grid = [1]} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %ninf = arith.constant 0xFC00 : f16\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [64, 128], strides: [128, 1] {} : memref<64x128xf16>\n"
    "    %yv = ktdp.construct_memory_view %y, sizes: [128, 64], strides: [64, 1] {} : memref<128x64xf16>\n"
    "    %zv = ktdp.construct_memory_view %z, sizes: [64, 128], strides: [128, 1] {} : memref<64x128xf16>\n"
    "    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {} : memref<64x128xf16> -> !ktdp.access_tile<64x128xindex>\n"
    "    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {} : memref<128x64xf16> -> !ktdp.access_tile<128x64xindex>\n"
    "    %zt = ktdp.construct_access_tile %zv[%c0, %c0] {} : memref<64x128xf16> -> !ktdp.access_tile<64x128xindex>\n"
    "    %a = ktdp.load %xt : !ktdp.access_tile<64x128xindex> -> tensor<64x128xf16>\n"
    "    %e = tensor.empty() : tensor<128x64xf16>\n"
    "    %t = linalg.transpose ins(%a : tensor<64x128xf16>) outs(%e : tensor<128x64xf16>) permutation = [1, 0]\n"
    "    ktdp.store %t, %yt : tensor<128x64xf16>, !ktdp.access_tile<128x64xindex>\n"
    "    %i = tensor.splat %ninf : tensor<64xf16>\n"
    "    %m = linalg.reduce { arith.maximumf } ins(%a : tensor<64x128xf16>) outs(%i : tensor<64xf16>) dimensions = [1]\n"
    "    %e2 = tensor.empty() : tensor<64x128xf16>\n"
    "    %mb = linalg.broadcast ins(%m : tensor<64xf16>) outs(%e2 : tensor<64x128xf16>) dimensions = [1]\n"
    "    %d = arith.subf %a, %mb : tensor<64x128xf16>\n"
    "    ktdp.store %d, %zt : tensor<64x128xf16>, !ktdp.access_tile<64x128xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_parser_reads_ops_regions_attributes_and_affine_sets(void)
{
    char err[256];
    ml_module *m = ml_parse(rows_prog, strlen(rows_prog), "rows.mlir", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    const ml_op *mod = &m->top.blocks[0].ops[0];
    CU_ASSERT_STRING_EQUAL(mod->name, "module");
    int from = 0;
    const ml_op *fn = &ml_op_region(mod, &from)->blocks[0].ops[0];
    CU_ASSERT_STRING_EQUAL(fn->name, "func.func");
    const ml_attr *grid = ml_op_attr(m, fn, "grid");
    CU_ASSERT_FATAL(grid && grid->kind == ML_A_ARRAY && grid->n == 1);
    CU_ASSERT_EQUAL(grid->items[0]->i, 4);
    from = 0;
    const ml_block *body = &ml_op_region(fn, &from)->blocks[0];
    CU_ASSERT_STRING_EQUAL_FATAL(body->ops[4].name, "arith.constant"); /* %ninf: 0xFC00 : f16 */
    CU_ASSERT_EQUAL(body->ops[4].items[0].attr->i, 0xFC00);
    const ml_op *view = &body->ops[6];
    const ml_attr *set = ml_op_attr(m, view, "coordinate_set");
    CU_ASSERT_FATAL(set && set->kind == ML_A_SET && set->aff->n == 4 && set->aff->ndims == 2);
    int64_t in[2] = {63, 127}, out[2] = {64, 0}, v;
    int inside = 1, outside = 1;
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(ml_aexpr_eval(set->aff->e[i], in, NULL, &v), 0);
        inside &= v >= 0;
        CU_ASSERT_EQUAL(ml_aexpr_eval(set->aff->e[i], out, NULL, &v), 0);
        outside &= v >= 0;
    }
    CU_ASSERT(inside && !outside);
    const ml_type *t = ml_op_last_type(view);
    CU_ASSERT(t && t->kind == ML_T_MEMREF && t->rank == 2 && t->shape[0] == 64 && t->shape[1] == 128);
    CU_ASSERT_STRING_EQUAL(t->elem->name, "f16");
    const ml_item *sizes = ml_op_keyword(view, "sizes");
    CU_ASSERT(sizes && sizes->kind == ML_I_LIST && sizes->n == 3); /* 64 , 128 */
    ml_free(m);
}

static void expect_error(const char *text, const char *want)
{
    char err[256] = "";
    ml_module *m = ml_parse(text, strlen(text), "bad.mlir", err, sizeof err);
    CU_ASSERT_PTR_NULL(m);
    ml_free(m);
    if (!strstr(err, want) || strncmp(err, "bad.mlir:", 9) || strchr(err, '\n')) {
        printf("\n  for %s\n  got %s\n  want %s\n", text, err, want);
        CU_FAIL("error message");
    }
}

static void test_parser_errors_are_one_line_with_file_line_column(void)
{
    expect_error("module {\n  %a = arith.constant 1 : index\n", "bad.mlir:3:1: expected '}'");
    expect_error("%a = arith.constant 99999999999999999999 : index", "bad.mlir:1:21: integer");
    expect_error("%x = foo.bar : tensor<4xq7>", "expected a type");
    expect_error("%x = foo.bar {k = affine_map<(d0) -> (d1)>}", "unexpected 'd1' in an affine expression");
    expect_error("}", "unmatched '}'");
    expect_error("%x = foo.bar \"abc", "unterminated string");
    expect_error("%x = foo.bar `", "unexpected character '`'");
    expect_error("%x foo.bar", "expected ',' or '='");
    char deep[2000];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    memcpy(deep, "x.y ", 4);
    expect_error(deep, "nesting deeper than");
}

/* Damaged copies of a real program (bytes replaced, deleted, cut short)
 * parse or fail with one line naming the file; never a crash (the
 * sanitizer build runs this too). */
static void test_parser_survives_damaged_text(void)
{
    size_t n = strlen(rows_prog);
    char *buf = malloc(n + 1);
    static const char junk[] = "{}[]()<>%^#!@\":=,-x0123456789.\n ";
    uint64_t s = 12345;
    for (int round = 0; round < 3000; round++) {
        memcpy(buf, rows_prog, n + 1);
        size_t len = n;
        for (int k = 0; k < 1 + round % 4; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (s >> 33) % len;
            int what = (int)((s >> 20) % 3);
            if (what == 0) buf[at] = junk[(s >> 8) % (sizeof junk - 1)];
            else if (what == 1) memmove(buf + at, buf + at + 1, len - at), len--;
            else len = at, buf[len] = 0;
            if (len == 0) break;
        }
        char err[256] = "";
        ml_module *m = ml_parse(buf, len, "d.mlir", err, sizeof err);
        if (!m) CU_ASSERT(strncmp(err, "d.mlir:", 7) == 0 && !strchr(err, '\n'));
        ml_free(m);
    }
    free(buf);
}

static int write_prog(const char *text, char *path, size_t len)
{
    tu_write_tmpfile(".mlir", text, strlen(text), path, len);
    return 0;
}

/* text compiled for the 4-core chip (args as --arg) and loaded on a device
 * of its own (*dev); path gets the program's file, for the caller to remove. */
static rt_program *load_prog(const char *text, const kt_arg *args, int nargs, char *path, size_t len, rt_device **dev)
{
    return tu_ktir_load(text, args, nargs, &cfg4, path, len, dev);
}

static void test_rows_program_runs_on_four_cores_with_the_values_computed_here(void)
{
    char path[512], err[512];
    kt_arg args[] = {{"BLOCK", 8}};
    rt_device *dev;
    rt_program *prog = load_prog(rows_prog, args, 1, path, sizeof path, &dev);
    /* the scf.for of two steps, unrolled as compiled, is a counted loop again */
    const isa_stream *st = &rt_program_isa(prog)->cores[0];
    int loops = 0;
    for (size_t i = 0; i < st->n; i++)
        loops += st->insns[i].op == ISA_OP_LOOP;
    CU_ASSERT(loops >= 1);
    static float a[64 * 128], b[64 * 128], y[64 * 128];
    for (int i = 0; i < 64 * 128; i++) /* small values exact in fp16 */
        a[i] = (float)((i * 7) % 17 - 8) / 16, b[i] = (float)((i * 5) % 13 - 6) / 32;
    CU_ASSERT_EQUAL(rt_set_input(prog, "a_ptr", a, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "b_ptr", b, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT(res.stats.cycles > 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y_ptr", y, err, sizeof err), 0);
    int bad = 0;
    for (int r = 0; r < 64; r++) {
        int r3 = r / 8 * 8 + 3; /* the row whose max every row of its block subtracts */
        double mx = -INFINITY;
        for (int c = 0; c < 128; c++) mx = fmax(mx, (double)a[r3 * 128 + c] + b[r3 * 128 + c]);
        for (int c = 0; c < 128; c++) {
            double want = exp((double)a[r * 128 + c] + b[r * 128 + c]) - mx;
            /* DL16 rounds each of add, exp, max and sub to 9 fraction bits
             * (2^-10 relative), the fp16 read-back narrows once more: 1%
             * of the magnitudes involved is well above that chain. */
            double tol = 1e-2 * (fabs(want) + fabs(mx) + 1);
            bad += fabs(y[r * 128 + c] - want) > tol;
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

static void test_matmul_then_ring_allreduce_gives_the_sum_of_the_tiles_products(void)
{
    char path[512], err[512];
    rt_device *dev;
    rt_program *prog = load_prog(ring_prog, NULL, 0, path, sizeof path, &dev);
    static float a[4 * 64], b[64 * 64], out[64];
    for (int i = 0; i < 4 * 64; i++) a[i] = (float)((i * 3) % 7 - 3) / 4;
    for (int i = 0; i < 64 * 64; i++) b[i] = (float)((i * 5) % 9 - 4) / 8;
    CU_ASSERT_EQUAL(rt_set_input(prog, "a", a, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "b", b, err, sizeof err), 0);
    rt_run_result res;
    int rc = rt_launch(prog, &res);
    if (rc) {
        rt_run_format(&res, err, sizeof err);
        printf("\n%s\n", err);
    }
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT(res.stats.ring_bytes > 0 && res.stats.macs == 4 * 64 * 64);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "out", out, err, sizeof err), 0);
    int bad = 0;
    for (int n = 0; n < 64; n++) {
        double want = 0;
        for (int r = 0; r < 4; r++)
            for (int k = 0; k < 64; k++) want += (double)a[r * 64 + k] * b[k * 64 + n];
        /* Each product is exact in fp32 and DL16-rounded once (2^-10
         * relative), then three DL16-rounded sums: 1% of the largest
         * partial magnitude (at most 64 * 0.75 * 0.5 = 24) covers them. */
        bad += fabs(out[n] - want) > 0.01 * 24;
    }
    CU_ASSERT_EQUAL(bad, 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

/* Only tile 0 reduces (inside scf.if): it waits at the exchange's barrier
 * for tiles that never come, and the simulator names the deadlock. */
static char *replace(const char *text, const char *from, const char *to);

static void test_an_exchange_only_one_tile_reaches_is_a_deadlock_the_simulator_reports(void)
{
    char *bad = replace(ring_prog, "    %s = ktdp.inter_tile_reduce", "    %first0 = arith.cmpi eq, %id, %c0 : index\n"
                                                                      "    scf.if %first0 {\n    %s = ktdp.inter_tile_reduce");
    char *bad2 = replace(bad, "    %first = arith.cmpi", "    }\n    %first = arith.cmpi");
    char *bad3 = replace(bad2, "      ktdp.store %s, %ot", "      ktdp.store %p, %ot");
    char path[512], err[512];
    rt_device *dev;
    rt_program *prog = load_prog(bad3, NULL, 0, path, sizeof path, &dev);
    CU_ASSERT_EQUAL(rt_fill_inputs(prog, 1, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL(rt_launch(prog, &res), -1);
    CU_ASSERT_EQUAL(res.status, RT_RUN_FAULT);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.fault.msg, "deadlock"));
    rt_unload(prog);
    rt_close(dev);
    remove(path);
    free(bad), free(bad2), free(bad3);
}

static void test_fp32_tile_of_a_dynamic_view_is_clipped_to_its_size(void)
{
    char path[512], err[512];
    kt_arg args[] = {{"n", 96}};
    rt_device *dev;
    rt_program *prog = load_prog(dyn_prog, args, 1, path, sizeof path, &dev);
    CU_ASSERT_EQUAL(rt_program_isa(prog)->tensors[0].dev_dtype, ISA_T_F32);
    CU_ASSERT_EQUAL(rt_program_isa(prog)->tensors[0].shape[0], 96); /* as far as the view reaches */
    float x[96], y[96];
    for (int i = 0; i < 96; i++) x[i] = 0.1f * (float)i - 3.3f; /* not DL16-exact: fp32 is kept */
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y", y, err, sizeof err), 0);
    int bad = 0;
    for (int i = 0; i < 96; i++) bad += y[i] != x[i] * 2.5f; /* one fp32 multiply, rounded as the host rounds it */
    CU_ASSERT_EQUAL(bad, 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

/* The chip writes whole sticks: the cores' parts of a shared stick are
 * merged on core 0 and written once, so the race check (on) finds nothing
 * and every element is the one its core stored; the lanes of m nobody
 * stores keep what HBM held. */
static void test_cores_storing_parts_of_one_stick_all_land(void)
{
    char path[512], err[512];
    kt_arg args[] = {{"x", 0}, {"y", 1024}, {"m", 2048}};
    rt_device *dev;
    rt_program *prog = load_prog(halves_prog, args, 3, path, sizeof path, &dev);
    static float hbm[2088], out[2088];
    for (int i = 0; i < 2088; i++) hbm[i] = (float)((i * 11) % 17 - 8) / 8; /* eighths in [-1, 1]: exact in DL16 */
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "hbm", hbm, ISA_HT_F32, err, sizeof err), 0);
    rt_run_result res;
    int rc = rt_launch(prog, &res);
    if (rc) {
        rt_run_format(&res, err, sizeof err);
        printf("\n%s\n", err);
    }
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "hbm", out, err, sizeof err), 0);
    int bad_y = 0, bad_m = 0, bad_kept = 0;
    for (int i = 0; i < 1024; i++) bad_y += out[1024 + i] != 2 * hbm[i]; /* doubling is exact */
    for (int r = 0; r < 16; r++) {
        float sum = 0;
        for (int k = 0; k < 64; k++) sum += hbm[r * 64 + k];
        bad_m += out[2048 + r] != sum; /* partial sums of eighths below 64 are exact in DL16 */
    }
    for (int i = 0; i < 1024; i++) bad_kept += out[i] != hbm[i];
    for (int i = 16; i < 40; i++) bad_kept += out[2048 + i] != hbm[2048 + i];
    CU_ASSERT_EQUAL(bad_y, 0);
    CU_ASSERT_EQUAL(bad_m, 0);
    CU_ASSERT_EQUAL(bad_kept, 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

/* x * c / (c + exp(-x)) for x in [-64, 64): run, read back, count the
 * values off by more than 1% (each DL16 rounding is 2^-10 relative, a few
 * of them in a row) and the NaNs. */
static void run_silu(const char *c_text, double cval, int *off, int *nans, int *sigm)
{
    char path[512], err[512];
    char *text = replace(silu_prog, "ONE", c_text);
    rt_device *dev;
    rt_program *prog = load_prog(text, NULL, 0, path, sizeof path, &dev);
    const isa_stream *st = &rt_program_isa(prog)->cores[0];
    *sigm = 0;
    for (size_t i = 0; i < st->n; i++) *sigm += st->insns[i].op == ISA_OP_SFP_SIGM;
    float x[128], y[128];
    for (int i = 0; i < 128; i++) x[i] = (float)(i - 64); /* exp(-x) past DL16's 2^33 below x = -22.9 */
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y", y, err, sizeof err), 0);
    *off = *nans = 0;
    for (int i = 0; i < 128; i++) {
        double want = x[i] * cval / (cval + exp(-(double)x[i]));
        *nans += isnan(y[i]);
        *off += !isnan(y[i]) && fabs(y[i] - want) > 1e-2 * (fabs(want) + 1e-3);
    }
    rt_unload(prog);
    rt_close(dev);
    remove(path);
    free(text);
}

/* DL16 has no infinity: exp(-x) overflows to NINF for x below -22.9, and
 * 1 / (1 + NINF) op by op would be NaN where fp16 gives 0.  The written-out
 * sigmoid is sfp.sigm, fp32 inside: every value right, no NaN.  With 2 for
 * the constant it is not a sigmoid and runs op by op: NaN where exp overflows. */
static void test_a_sigmoid_written_out_is_one_sfp_op_and_exp_overflow_gives_no_nan(void)
{
    int off, nans, sigm;
    run_silu("1.0", 1.0, &off, &nans, &sigm);
    CU_ASSERT_EQUAL(sigm, 1);
    CU_ASSERT_EQUAL(off, 0);
    CU_ASSERT_EQUAL(nans, 0);
    run_silu("2.0", 2.0, &off, &nans, &sigm);
    CU_ASSERT_EQUAL(sigm, 0);
    CU_ASSERT_EQUAL(off, 0);
    CU_ASSERT_EQUAL(nans, 42); /* x = -64 .. -23: exp(-x) >= e^23, past DL16's largest, 2^32 x 1.996 */
}

/* The rows the index tensor names, gathered on the chip: every element
 * copied exactly; an index past the table is the chip's fault, naming it. */
static void test_an_indirect_tile_gathers_the_rows_its_index_tensor_names(void)
{
    char path[512], err[512];
    rt_device *dev;
    rt_program *prog = load_prog(embed_prog, NULL, 0, path, sizeof path, &dev);
    static float table[16 * 128], out[4 * 128];
    for (int i = 0; i < 16 * 128; i++) table[i] = (float)((i * 13) % 257) / 4; /* quarters below 64.25: exact in DL16 */
    float ids[4] = {5, 0, 15, 7};
    CU_ASSERT_EQUAL(rt_set_input(prog, "table", table, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "ids", ids, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "out", out, err, sizeof err), 0);
    int bad = 0;
    for (int r = 0; r < 4; r++)
        for (int e = 0; e < 128; e++) bad += out[r * 128 + e] != table[(int)ids[r] * 128 + e];
    CU_ASSERT_EQUAL(bad, 0);
    ids[2] = 16;
    CU_ASSERT_EQUAL(rt_set_input(prog, "ids", ids, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_launch(prog, &res), -1);
    CU_ASSERT_EQUAL(res.status, RT_RUN_FAULT);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.fault.msg, "is 16, not an integer row in [0, 16)"));
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

static void test_an_element_gather_picks_each_element_its_two_indices_name(void)
{
    char path[512], err[512];
    rt_device *dev;
    rt_program *prog = load_prog(elem_prog, NULL, 0, path, sizeof path, &dev);
    static float x[8 * 128], r[160], c[160], y[160];
    for (int i = 0; i < 8 * 128; i++) x[i] = (float)((i * 13) % 257) / 4; /* quarters below 64.25: exact in DL16 */
    for (int i = 0; i < 160; i++) r[i] = (float)((i * 5) % 8), c[i] = (float)((i * 37 + 3) % 128);
    c[0] = 127, r[159] = 7; /* the last column and the last row */
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "hbm_int_100", r, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "hbm_int_300", c, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y", y, err, sizeof err), 0);
    int bad = 0;
    for (int i = 0; i < 160; i++) bad += y[i] != x[(int)r[i] * 128 + (int)c[i]];
    CU_ASSERT_EQUAL(bad, 0);
    /* a column outside the view faults through its row's index: 3 + 8 rows */
    r[41] = 3, c[41] = 128;
    CU_ASSERT_EQUAL(rt_set_input(prog, "hbm_int_300", c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "hbm_int_100", r, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_launch(prog, &res), -1);
    CU_ASSERT_EQUAL(res.status, RT_RUN_FAULT);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.fault.msg, "is 11, not an integer row in [0, 8)"));
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

/* Every element lands where its two indices say, in index order: of
 * colliding indices the last one's value stays, as a sequential loop
 * leaves it; the elements no index names keep their values; a column
 * outside the view faults through its row's index. */
static void test_an_element_scatter_stores_each_element_where_its_indices_say_last_writer_kept(void)
{
    char path[512], err[512];
    rt_device *dev;
    rt_program *prog = load_prog(scatter_prog, NULL, 0, path, sizeof path, &dev);
    static float x[160], r[160], c[160], y0[8 * 128], y[8 * 128], want[8 * 128];
    for (int i = 0; i < 160; i++) x[i] = (float)((i * 13) % 257) / 4; /* distinct quarters below 64.25: exact in DL16 */
    for (int i = 0; i < 8 * 128; i++) y0[i] = -1.0f - (float)(i % 50) / 4; /* negative: never one of x's values */
    for (int i = 0; i < 160; i++) r[i] = (float)((i * 5) % 8), c[i] = (float)((i * 37 + 3) % 128); /* i, i + 128 collide */
    c[0] = 127, r[159] = 7;                                /* the last column and the last row */
    r[1] = r[50] = r[150] = 2, c[1] = c[50] = c[150] = 64; /* three writers across tile rows */
    r[30] = r[35] = 6, c[30] = c[35] = 3;                  /* two in one tile row, across index sticks */
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "y", y0, ISA_HT_F32, err, sizeof err), 0); /* an output the scatter reads */
    CU_ASSERT_EQUAL(rt_set_input(prog, "hbm_int_100", r, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "hbm_int_300", c, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y", y, err, sizeof err), 0);
    memcpy(want, y0, sizeof want);
    for (int i = 0; i < 160; i++) want[(int)r[i] * 128 + (int)c[i]] = x[i];
    int bad = 0;
    for (int i = 0; i < 8 * 128; i++) bad += y[i] != want[i];
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(y[2 * 128 + 64], x[150]);
    CU_ASSERT_EQUAL(y[6 * 128 + 3], x[35]);
    CU_ASSERT_EQUAL(y[(int)r[130] * 128 + (int)c[130]], x[130]); /* not x[2], its first writer */
    c[41] = 128; /* row 5 + 8 rows */
    CU_ASSERT_EQUAL(rt_set_input(prog, "hbm_int_300", c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_launch(prog, &res), -1);
    CU_ASSERT_EQUAL(res.status, RT_RUN_FAULT);
    CU_ASSERT_PTR_NOT_NULL(strstr(res.fault.msg, "not an integer row in [0, 8)"));
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

/* Instructions of each core of text compiled for the 4-core chip. */
static void core_lengths(const char *text, const kt_arg *args, int nargs, size_t n[4])
{
    char path[512], err[512];
    int code = 0;
    write_prog(text, path, sizeof path);
    isa_program *p = kt_compile_file(path, args, nargs, &cfg4, err, sizeof err, &code, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int i = 0; i < 4; i++) n[i] = p->cores[i].n;
    isa_program_free(p);
    remove(path);
}

static void test_without_a_grid_a_body_without_tile_ids_runs_on_one_core(void)
{
    size_t n[4];
    char *one = replace(elem_prog, "attributes {grid = [1]} ", "");
    CU_ASSERT_PTR_NULL_FATAL(strstr(one, "grid"));
    core_lengths(one, NULL, 0, n);
    CU_ASSERT(n[0] > 1);
    CU_ASSERT(n[1] == 1 && n[2] == 1 && n[3] == 1); /* halt only */
    char *all = replace(rows_prog, "attributes {grid = [4]} ", "");
    CU_ASSERT_PTR_NULL_FATAL(strstr(all, "grid"));
    kt_arg args[] = {{"BLOCK", 8}};
    core_lengths(all, args, 1, n);
    CU_ASSERT(n[0] > 1 && n[1] > 1 && n[2] > 1 && n[3] > 1); /* RFC 0682: every core a tile */
    free(one);
    free(all);
}

static void test_transpose_and_row_broadcast_move_every_element_where_it_belongs(void)
{
    char path[512], err[512];
    rt_device *dev;
    rt_program *prog = load_prog(tr_prog, NULL, 0, path, sizeof path, &dev);
    static float x[64 * 128], y[128 * 64], z[64 * 128];
    for (int i = 0; i < 64 * 128; i++) x[i] = (float)((i * 37) % 101) / 8; /* distinct, exact in DL16 */
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y", y, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "z", z, err, sizeof err), 0);
    int bad_t = 0, bad_b = 0;
    for (int r = 0; r < 64; r++) {
        float mx = -INFINITY;
        for (int c = 0; c < 128; c++) mx = fmaxf(mx, x[r * 128 + c]);
        for (int c = 0; c < 128; c++) {
            bad_t += y[c * 64 + r] != x[r * 128 + c]; /* a copy: exact */
            /* x - max of values with 1/8 steps below 12.625: exact in DL16 */
            bad_b += z[r * 128 + c] != x[r * 128 + c] - mx;
        }
    }
    CU_ASSERT_EQUAL(bad_t, 0);
    CU_ASSERT_EQUAL(bad_b, 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

/* The command line: `spyre run FILE.mlir` with inputs from files and
 * --check against an expected file written here: exit 0 and "ok" when the
 * values are right, 1 and MISMATCH when not; a syntax error is one line
 * FILE:LINE:COL and exit 2; LX overflow exit 3. */
static void test_spyre_run_of_a_ktir_file_checks_values_and_exits_by_the_kind_of_failure(void)
{
    static const char *prog =
        "module {\n"
        "  func.func @add(%a: index, %b: index, %y: index) attributes {grid = [2]} {\n"
        "    %id = ktdp.get_compute_tile_id : index\n"
        "    %c0 = arith.constant 0 : index\n"
        "    %c64 = arith.constant 64 : index\n"
        "    %off = arith.muli %id, %c64 : index\n"
        "    %av = ktdp.construct_memory_view %a, sizes: [128], strides: [1] {} : memref<128xf16>\n"
        "    %bv = ktdp.construct_memory_view %b, sizes: [128], strides: [1] {} : memref<128xf16>\n"
        "    %yv = ktdp.construct_memory_view %y, sizes: [128], strides: [1] {} : memref<128xf16>\n"
        "    %at = ktdp.construct_access_tile %av[%off] {} : memref<128xf16> -> !ktdp.access_tile<64xindex>\n"
        "    %bt = ktdp.construct_access_tile %bv[%off] {} : memref<128xf16> -> !ktdp.access_tile<64xindex>\n"
        "    %yt = ktdp.construct_access_tile %yv[%off] {} : memref<128xf16> -> !ktdp.access_tile<64xindex>\n"
        "    %x1 = ktdp.load %at : !ktdp.access_tile<64xindex> -> tensor<64xf16>\n"
        "    %x2 = ktdp.load %bt : !ktdp.access_tile<64xindex> -> tensor<64xf16>\n"
        "    %s = arith.addf %x1, %x2 : tensor<64xf16>\n"
        "    ktdp.store %s, %yt : tensor<64xf16>, !ktdp.access_tile<64xindex>\n"
        "    return\n"
        "  }\n"
        "}\n";
    char dir[512], path[600], fa[600], fb[600], fe[600], fw[600], args[4096], out[8192], err[256];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/add.mlir", dir);
    snprintf(fa, sizeof fa, "%s/a.f32", dir), snprintf(fb, sizeof fb, "%s/b.f32", dir);
    snprintf(fe, sizeof fe, "%s/expected.safetensors", dir), snprintf(fw, sizeof fw, "%s/wrong.safetensors", dir);
    tu_write_file(path, prog, strlen(prog));
    float a[128], b[128], y[128], wrong[128];
    for (int i = 0; i < 128; i++) a[i] = (float)i / 4, b[i] = (float)(i % 7) - 3, y[i] = a[i] + b[i], wrong[i] = y[i] + 1;
    tu_write_file(fa, a, sizeof a), tu_write_file(fb, b, sizeof b);
    rt_st_entry e = {"y", RT_ST_F32, 1, {128}, y}, w = {"y", RT_ST_F32, 1, {128}, wrong};
    CU_ASSERT_EQUAL_FATAL(rt_st_write(fe, &e, 1, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(rt_st_write(fw, &w, 1, err, sizeof err), 0);
    snprintf(args, sizeof args, "run %s --input a=%s --input b=%s --check --expected %s", path, fa, fb, fe);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
    const char *ok[] = {"cycles=", "ktir_cpu_roofline_cycles=", "check y: within_tol=128/128", " ok"};
    tu_assert_finds(1, out, ok, 4, __FILE__, __LINE__);
    snprintf(args, sizeof args, "run %s --input a=%s --input b=%s --check --expected %s", path, fa, fb, fw);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "MISMATCH"));
    char *bad = replace(prog, "%s = arith.addf %x1, %x2", "%s = arith.addf %x1 %x2 )");
    tu_write_file(path, bad, strlen(bad));
    snprintf(args, sizeof args, "run %s", path);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    CU_ASSERT(strstr(out, "add.mlir:15:") != NULL && strchr(out, '\n') == out + strlen(out) - 1);
    char *big = replace(prog, "-> tensor<64xf16>\n    %x2", "-> tensor<64xf16>\n    %big = tensor.empty() : tensor<4096x512xf16>\n    %x2");
    tu_write_file(path, big, strlen(big));
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "LX scratchpad overflow: core 0"));
    free(bad), free(big);
    tu_rmtree(dir);
}

static void expect_compile_error(const char *text, int want_code, const char *want)
{
    char path[512], err[512] = "";
    write_prog(text, path, sizeof path);
    kt_arg args[] = {{"BLOCK", 8}};
    int code = 0;
    isa_program *p = kt_compile_file(path, args, 1, &cfg4, err, sizeof err, &code, NULL);
    CU_ASSERT_PTR_NULL(p);
    isa_program_free(p);
    CU_ASSERT_EQUAL(code, want_code);
    if (!strstr(err, want)) {
        printf("\n  got %s\n  want %s\n", err, want);
        CU_FAIL("compile error message");
    }
    remove(path);
}

static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    char *r = malloc(strlen(text) + strlen(to) + 1);
    memcpy(r, text, (size_t)(at - text));
    strcpy(r + (at - text), to);
    strcat(r, at + strlen(from));
    return r;
}

/* A tile of a rank-4 view laid out in another order (paged KV caches): its
 * type's dimensions are the view's d0, d2, d1, d3. */
static const char *order_prog =
    "module {\n"
    "  func.func @paged(%x: index, %BLOCK: index) attributes {grid = [1]} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [4, 64, 8, 128], strides: [65536, 1024, 128, 1] {}\n"
    "      : memref<4x64x8x128xf16>\n"
    "    %t = ktdp.construct_access_tile %xv[%c0, %c0, %c0, %c0] {\n"
    "      access_tile_order = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>}\n"
    "      : memref<4x64x8x128xf16> -> !ktdp.access_tile<TILExindex>\n"
    "    %a = ktdp.load %t : !ktdp.access_tile<TILExindex> -> tensor<TILExf16>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* RFC 0682's spelling: `#ktdp.spyre_memory_space<HBM>` and subscripts that
 * are affine or quasi-affine expressions: tile t copies rows of block
 * (t + 1) mod 4 of a to block t of y. */
static const char *subscript_prog =
    "module {\n"
    "  func.func @rot(%a_ptr: index, %y_ptr: index, %BLOCK: index) attributes {grid = [4]} {\n"
    "    %id = ktdp.get_compute_tile_id : index\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %c64 = arith.constant 64 : index\n"
    "    %a = ktdp.construct_memory_view %a_ptr, sizes: [16, 64], strides: [64, 1] {\n"
    "      memory_space = #ktdp.spyre_memory_space<HBM>} : memref<16x64xf16>\n"
    "    %y = ktdp.construct_memory_view %y_ptr, sizes: [16, 64], strides: [64, 1] {\n"
    "      memory_space = #ktdp.spyre_memory_space<HBM>} : memref<16x64xf16>\n"
    "    %ta = ktdp.construct_access_tile %a[(%id + 1) % 4 * 4, %c64 / 2 - 32] {} : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>\n"
    "    %ty = ktdp.construct_access_tile %y[%id * 4 + %c0, %c0 * 3] {} : memref<16x64xf16> -> !ktdp.access_tile<4x64xindex>\n"
    "    %x = ktdp.load %ta : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>\n"
    "    ktdp.store %x, %ty : tensor<4x64xf16>, !ktdp.access_tile<4x64xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_rfc_subscript_expressions_and_memory_space_spelling_move_the_rows_they_name(void)
{
    char path[512], err[512];
    rt_device *dev;
    kt_arg args[] = {{"BLOCK", 4}};
    rt_program *prog = load_prog(subscript_prog, args, 1, path, sizeof path, &dev);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    static float a[16 * 64], y[16 * 64];
    for (int i = 0; i < 16 * 64; i++) a[i] = (float)(i % 251) / 8; /* multiples of 1/8 below 32: exact in DL16 */
    CU_ASSERT_EQUAL(rt_set_input(prog, "a_ptr", a, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y_ptr", y, err, sizeof err), 0);
    int bad = 0;
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 64; c++) bad += y[r * 64 + c] != a[((r / 4 + 1) % 4 * 4 + r % 4) * 64 + c];
    CU_ASSERT_EQUAL(bad, 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

static void test_bad_subscripts_and_a_stored_empty_tensor_are_refused_with_their_line(void)
{
    static const char *from[] = {"%c64 / 2 - 32]", "%c64 / 2 - 32]", "%c64 / 2 - 32]",
                                 "    ktdp.store %x, %ty"};
    static const char *to[] = {"%c64 / %c0]", "%c64 / 2 *]", "%c64 2]", "    %e = tensor.empty() : tensor<4x64xf16>\n    ktdp.store %e, %ty"};
    static const char *want[] = {":10:67: an access tile's subscript: a divisor that is not positive",
                                 "an access tile's subscript: an operand is missing",
                                 "an access tile's subscript: expected `,` or `]`",
                                 "%e holds tensor.empty's undefined contents (is an op's result unused?)"};
    for (int k = 0; k < 4; k++) {
        char *p = replace(subscript_prog, from[k], to[k]);
        expect_compile_error(p, KT_EXIT_REFUSED, want[k]);
        free(p);
    }
}

static void test_chip_rule_violations_are_exit_3_and_unsupported_ops_exit_2(void)
{
    /* ktir-cpu's paged RFC examples: a tile larger than LX is the chip's
     * limit whatever its order (512 KB here, the 4-core chip's LX is 256 KB);
     * one that fits is refused where it would move, its order unsupported. */
    static const char *shapes[] = {"4x8x64x128", "1x8x2x128", "1x9x2x128"}; /* the last 9 of the view's 8 along d2 */
    static const char *want[] = {"LX scratchpad overflow: core 0 needs 524288 bytes",
                                 "not supported: an access_tile_order other than the identity",
                                 "out-of-bounds access tile: core 0, dimension 2: [0, 9)"};
    for (int k = 0; k < 3; k++) {
        char *p1 = replace(order_prog, "TILE", shapes[k]), *p2 = replace(p1, "TILE", shapes[k]), *p3 = replace(p2, "TILE", shapes[k]);
        expect_compile_error(p3, k == 1 ? KT_EXIT_REFUSED : KT_EXIT_CHIP, want[k]);
        free(p1), free(p2), free(p3);
    }
    /* Rows 8k+1 .. 8k+8: the last block of core 3 runs past the 64 rows of the view. */
    char *far = replace(rows_prog, "%row = arith.muli %blk, %BLOCK : index", "%row0 = arith.muli %blk, %BLOCK : index\n      %row = arith.addi %row0, %c1 : index");
    expect_compile_error(far, KT_EXIT_CHIP, "out-of-bounds access tile: core 3, dimension 0: [57, 65)");
    char *big = replace(rows_prog, "%s = tensor.empty() : tensor<8x128xf16>", "%s = tensor.empty() : tensor<2048x128xf16>");
    expect_compile_error(big, KT_EXIT_CHIP, "LX scratchpad overflow: core 0");
    /* A tile type with a dynamic extent (read as INT64_MIN) is refused
     * before its bounds are compared: 128 - INT64_MIN overflowed (UBSan,
     * found by fuzz_ktir). */
    char *dyn = replace(rows_prog, "memref<64x128xf16> -> !ktdp.access_tile<8x128xindex>",
                        "memref<64x128xf16> -> !ktdp.access_tile<8x?xindex>");
    expect_compile_error(dyn, KT_EXIT_REFUSED, ":20:7: not supported: a tensor or tile");
    expect_compile_error(dyn, KT_EXIT_REFUSED, "not supported: a tensor or tile with a dimension of 0, a dynamic one");
    free(dyn);
    /* A tile at an offset near 2^63: its end is past INT64_MAX, written
     * without overflowing (UBSan). */
    char *edge = replace(rows_prog, "%row = arith.muli %blk, %BLOCK : index", "%row = arith.constant 9223372036854775807 : index");
    expect_compile_error(edge, KT_EXIT_CHIP, "dimension 0: [9223372036854775807, 9223372036854775815) outside the view's [0, 64)");
    free(edge);
    char *unk = replace(rows_prog, "math.exp", "math.frobnicate");
    expect_compile_error(unk, KT_EXIT_REFUSED, ": not supported: operation math.frobnicate");
    free(far), free(big), free(unk);
}

int main(void)
{
    tu_config("spyre-4core", &cfg4);
    static const tu_test tests[] = {
        {"parser_reads_ops_regions_attributes_and_affine_sets", test_parser_reads_ops_regions_attributes_and_affine_sets},
        {"parser_errors_are_one_line_with_file_line_column", test_parser_errors_are_one_line_with_file_line_column},
        {"parser_survives_damaged_text", test_parser_survives_damaged_text},
        {"rfc_subscript_expressions_and_memory_space_spelling_move_the_rows_they_name",
         test_rfc_subscript_expressions_and_memory_space_spelling_move_the_rows_they_name},
        {"bad_subscripts_and_a_stored_empty_tensor_are_refused_with_their_line",
         test_bad_subscripts_and_a_stored_empty_tensor_are_refused_with_their_line},
        {"rows_program_runs_on_four_cores_with_the_values_computed_here",
         test_rows_program_runs_on_four_cores_with_the_values_computed_here},
        {"matmul_then_ring_allreduce_gives_the_sum_of_the_tiles_products",
         test_matmul_then_ring_allreduce_gives_the_sum_of_the_tiles_products},
        {"an_exchange_only_one_tile_reaches_is_a_deadlock_the_simulator_reports",
         test_an_exchange_only_one_tile_reaches_is_a_deadlock_the_simulator_reports},
        {"fp32_tile_of_a_dynamic_view_is_clipped_to_its_size", test_fp32_tile_of_a_dynamic_view_is_clipped_to_its_size},
        {"cores_storing_parts_of_one_stick_all_land", test_cores_storing_parts_of_one_stick_all_land},
        {"a_sigmoid_written_out_is_one_sfp_op_and_exp_overflow_gives_no_nan",
         test_a_sigmoid_written_out_is_one_sfp_op_and_exp_overflow_gives_no_nan},
        {"an_indirect_tile_gathers_the_rows_its_index_tensor_names",
         test_an_indirect_tile_gathers_the_rows_its_index_tensor_names},
        {"an_element_gather_picks_each_element_its_two_indices_name",
         test_an_element_gather_picks_each_element_its_two_indices_name},
        {"an_element_scatter_stores_each_element_where_its_indices_say_last_writer_kept",
         test_an_element_scatter_stores_each_element_where_its_indices_say_last_writer_kept},
        {"without_a_grid_a_body_without_tile_ids_runs_on_one_core",
         test_without_a_grid_a_body_without_tile_ids_runs_on_one_core},
        {"transpose_and_row_broadcast_move_every_element_where_it_belongs",
         test_transpose_and_row_broadcast_move_every_element_where_it_belongs},
        {"spyre_run_of_a_ktir_file_checks_values_and_exits_by_the_kind_of_failure",
         test_spyre_run_of_a_ktir_file_checks_values_and_exits_by_the_kind_of_failure},
        {"chip_rule_violations_are_exit_3_and_unsupported_ops_exit_2",
         test_chip_rule_violations_are_exit_3_and_unsupported_ops_exit_2},
        {NULL, NULL},
    };
    return tu_run("ktir", tests);
}
