/* Tests of the KTIR constructs of an attention kernel (ktir-cpu's
 * paged_attention.mlir has them all): a tile whose rows are two levels,
 * collapse/expand_shape over it, extf/truncf between f16 and f32 tensors,
 * an f32 matmul, linalg.generic with a causal mask built from linalg.index,
 * row broadcasts and an online softmax carried through scf.for.  Programs
 * written here, run on the simulated 4-core chip, checked against values
 * computed here. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static chip_config cfg4;

/* y[2p + t, 2 + h, :] = x[2p + t, 3 + 5p + h, :] for t < 2, h < 4: each
 * tile is 2 tokens x 4 heads of 128, whose 8 rows are not evenly spaced
 * (the token stride is 2048 elements, the head stride 128). */
static const char *copy_prog =
    "module {\n"
    "  func.func @copy(%x: index, %y: index) attributes {grid = [2]} {\n"
    "    %p = ktdp.get_compute_tile_id : index\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %c2 = arith.constant 2 : index\n"
    "    %c3 = arith.constant 3 : index\n"
    "    %c5 = arith.constant 5 : index\n"
    "    %t0 = arith.muli %p, %c2 : index\n"
    "    %p5 = arith.muli %p, %c5 : index\n"
    "    %h0 = arith.addi %p5, %c3 : index\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [4, 16, 128], strides: [2048, 128, 1] {} : memref<4x16x128xf16>\n"
    "    %yv = ktdp.construct_memory_view %y, sizes: [4, 8, 128], strides: [1024, 128, 1] {} : memref<4x8x128xf16>\n"
    "    %xt = ktdp.construct_access_tile %xv[%t0, %h0, %c0] {} : memref<4x16x128xf16> -> !ktdp.access_tile<2x4x128xindex>\n"
    "    %yt = ktdp.construct_access_tile %yv[%t0, %c2, %c0] {} : memref<4x8x128xf16> -> !ktdp.access_tile<2x4x128xindex>\n"
    "    %a = ktdp.load %xt : !ktdp.access_tile<2x4x128xindex> -> tensor<2x4x128xf16>\n"
    "    %m = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x4x128xf16> into tensor<8x128xf16>\n"
    "    %b = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 4, 128] : tensor<8x128xf16> into tensor<2x4x128xf16>\n"
    "    ktdp.store %b, %yt : tensor<2x4x128xf16>, !ktdp.access_tile<2x4x128xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_a_tile_of_two_row_levels_moves_every_row_and_nothing_else(void)
{
    char path[512], err[512];
    rt_device *dev;
    rt_program *prog = tu_ktir_load(copy_prog, NULL, 0, &cfg4, path, sizeof path, &dev);
    static float x[4 * 16 * 128], y0[4 * 8 * 128], y[4 * 8 * 128];
    for (int i = 0; i < 4 * 16 * 128; i++) x[i] = (float)((i * 13) % 257) / 4; /* quarters below 64.25: exact in DL16 */
    for (int i = 0; i < 4 * 8 * 128; i++) y0[i] = -1.0f - (float)(i % 50) / 4;  /* negative: never one of x's values */
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "y", y0, ISA_HT_F32, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y", y, err, sizeof err), 0);
    int bad = 0, moved = 0;
    for (int t = 0; t < 4; t++)
        for (int h = 0; h < 8; h++)
            for (int e = 0; e < 128; e++) {
                int p = t / 2, in = h >= 2 && h < 6, at = (t * 8 + h) * 128 + e;
                float want = in ? x[(t * 16 + 3 + 5 * p + h - 2) * 128 + e] : y0[at];
                bad += y[at] != want, moved += in;
            }
    CU_ASSERT_EQUAL(moved, 4 * 4 * 128);
    CU_ASSERT_EQUAL(bad, 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

/* extf of an 8 x 96 f16 matrix (three fp32 stick groups from two DL16
 * ones) and of a 96-vector, used by f32 ops (so widened, not only matmul
 * operands); x * x stored as f32 and, after truncf, as f16. */
static const char *cast_prog =
    "module {\n"
    "  func.func @cast(%x: index, %w: index, %y: index, %z: index, %u: index) attributes {grid = [1]} {\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %one = arith.constant 1.0 : f32\n"
    "    %xv = ktdp.construct_memory_view %x, sizes: [8, 96], strides: [96, 1] {} : memref<8x96xf16>\n"
    "    %wv = ktdp.construct_memory_view %w, sizes: [96], strides: [1] {} : memref<96xf16>\n"
    "    %yv = ktdp.construct_memory_view %y, sizes: [8, 96], strides: [96, 1] {} : memref<8x96xf32>\n"
    "    %zv = ktdp.construct_memory_view %z, sizes: [8, 96], strides: [96, 1] {} : memref<8x96xf16>\n"
    "    %uv = ktdp.construct_memory_view %u, sizes: [96], strides: [1] {} : memref<96xf32>\n"
    "    %xt = ktdp.construct_access_tile %xv[%c0, %c0] {} : memref<8x96xf16> -> !ktdp.access_tile<8x96xindex>\n"
    "    %wt = ktdp.construct_access_tile %wv[%c0] {} : memref<96xf16> -> !ktdp.access_tile<96xindex>\n"
    "    %yt = ktdp.construct_access_tile %yv[%c0, %c0] {} : memref<8x96xf32> -> !ktdp.access_tile<8x96xindex>\n"
    "    %zt = ktdp.construct_access_tile %zv[%c0, %c0] {} : memref<8x96xf16> -> !ktdp.access_tile<8x96xindex>\n"
    "    %ut = ktdp.construct_access_tile %uv[%c0] {} : memref<96xf32> -> !ktdp.access_tile<96xindex>\n"
    "    %a = ktdp.load %xt : !ktdp.access_tile<8x96xindex> -> tensor<8x96xf16>\n"
    "    %b = ktdp.load %wt : !ktdp.access_tile<96xindex> -> tensor<96xf16>\n"
    "    %a32 = arith.extf %a : tensor<8x96xf16> to tensor<8x96xf32>\n"
    "    %b32 = arith.extf %b : tensor<96xf16> to tensor<96xf32>\n"
    "    %sq = arith.mulf %a32, %a32 : tensor<8x96xf32>\n"
    "    ktdp.store %sq, %yt : tensor<8x96xf32>, !ktdp.access_tile<8x96xindex>\n"
    "    %sq16 = arith.truncf %sq : tensor<8x96xf32> to tensor<8x96xf16>\n"
    "    ktdp.store %sq16, %zt : tensor<8x96xf16>, !ktdp.access_tile<8x96xindex>\n"
    "    %ones = tensor.splat %one : tensor<96xf32>\n"
    "    %b1 = arith.addf %b32, %ones : tensor<96xf32>\n"
    "    ktdp.store %b1, %ut : tensor<96xf32>, !ktdp.access_tile<96xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_extf_and_truncf_convert_every_element_between_f16_and_f32(void)
{
    char path[512], err[512];
    rt_device *dev;
    rt_program *prog = tu_ktir_load(cast_prog, NULL, 0, &cfg4, path, sizeof path, &dev);
    static float x[8 * 96], w[96], y[8 * 96], z[8 * 96], u[96];
    /* Values of 8 significant bits at most: exact in DL16, their squares
     * exact in fp32, so y and u are exact; z is x*x rounded to DL16's 9
     * fraction bits (2^-10 relative) and read back through fp16. */
    for (int i = 0; i < 8 * 96; i++) x[i] = (float)((i * 37) % 201 - 100) / 8;
    for (int i = 0; i < 96; i++) w[i] = (float)((i * 11) % 97) / 16;
    CU_ASSERT_EQUAL(rt_set_input(prog, "x", x, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "w", w, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "y", y, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "z", z, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "u", u, err, sizeof err), 0);
    int bad_y = 0, bad_z = 0, bad_u = 0;
    for (int i = 0; i < 8 * 96; i++) {
        double sq = (double)x[i] * x[i];
        bad_y += y[i] != (float)sq;
        bad_z += fabs(z[i] - sq) > sq * 0x1p-9;
    }
    for (int i = 0; i < 96; i++) bad_u += u[i] != w[i] + 1.0f;
    CU_ASSERT_EQUAL(bad_y, 0);
    CU_ASSERT_EQUAL(bad_z, 0);
    CU_ASSERT_EQUAL(bad_u, 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

/* Causal attention over two KV tiles of 16 keys with an online softmax in
 * f32, as paged_attention.mlir computes it: each of 2 tiles takes a query
 * block of 2 tokens x 4 heads (rows not evenly spaced), S = scale * Q K^T
 * (f32 matmul), key column 16j + c masked (-inf, from an i32 bitcast) when
 * it is past ctx + 2p + row / 4, then M, L and acc carried through scf.for. */
static const char *attn_prog =
    "#id2 = affine_map<(d0, d1) -> (d0, d1)>\n"
    "#row = affine_map<(d0, d1) -> (d0)>\n"
    "#id1 = affine_map<(d0) -> (d0)>\n"
    "module {\n"
    "  func.func @attn(%q_ptr: index, %k_ptr: index, %v_ptr: index, %o_ptr: index, %ctx: index, %scale: f32)\n"
    "      attributes {grid = [2]} {\n"
    "    %p = ktdp.get_compute_tile_id : index\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %c2 = arith.constant 2 : index\n"
    "    %c4 = arith.constant 4 : index\n"
    "    %c16 = arith.constant 16 : index\n"
    "    %t0 = arith.muli %p, %c2 : index\n"
    "    %qv = ktdp.construct_memory_view %q_ptr, sizes: [4, 8, 64], strides: [512, 64, 1] {} : memref<4x8x64xf16>\n"
    "    %kv = ktdp.construct_memory_view %k_ptr, sizes: [32, 64], strides: [64, 1] {} : memref<32x64xf16>\n"
    "    %vv = ktdp.construct_memory_view %v_ptr, sizes: [32, 64], strides: [64, 1] {} : memref<32x64xf16>\n"
    "    %ov = ktdp.construct_memory_view %o_ptr, sizes: [4, 8, 64], strides: [512, 64, 1] {} : memref<4x8x64xf16>\n"
    "    %qt = ktdp.construct_access_tile %qv[%t0, %c4, %c0] {} : memref<4x8x64xf16> -> !ktdp.access_tile<2x4x64xindex>\n"
    "    %q3 = ktdp.load %qt : !ktdp.access_tile<2x4x64xindex> -> tensor<2x4x64xf16>\n"
    "    %q16 = tensor.collapse_shape %q3 [[0, 1], [2]] : tensor<2x4x64xf16> into tensor<8x64xf16>\n"
    "    %q = arith.extf %q16 : tensor<8x64xf16> to tensor<8x64xf32>\n"
    "    %bits = arith.constant 0xFF800000 : i32\n"
    "    %ninf = arith.bitcast %bits : i32 to f32\n"
    "    %zero = arith.constant 0.0 : f32\n"
    "    %m0 = tensor.splat %ninf : tensor<8xf32>\n"
    "    %l0 = tensor.splat %zero : tensor<8xf32>\n"
    "    %a0 = tensor.splat %zero : tensor<8x64xf32>\n"
    "    %mf, %lf, %af = scf.for %j = %c0 to %c2 step %c1 iter_args(%mi = %m0, %li = %l0, %ai = %a0)\n"
    "        -> (tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>) {\n"
    "      %k0 = arith.muli %j, %c16 : index\n"
    "      %kt = ktdp.construct_access_tile %kv[%k0, %c0] {} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>\n"
    "      %vt = ktdp.construct_access_tile %vv[%k0, %c0] {} : memref<32x64xf16> -> !ktdp.access_tile<16x64xindex>\n"
    "      %k16 = ktdp.load %kt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>\n"
    "      %v16 = ktdp.load %vt : !ktdp.access_tile<16x64xindex> -> tensor<16x64xf16>\n"
    "      %ke = tensor.empty() : tensor<64x16xf16>\n"
    "      %kT = linalg.transpose ins(%k16 : tensor<16x64xf16>) outs(%ke : tensor<64x16xf16>) permutation = [1, 0]\n"
    "      %k = arith.extf %kT : tensor<64x16xf16> to tensor<64x16xf32>\n"
    "      %v = arith.extf %v16 : tensor<16x64xf16> to tensor<16x64xf32>\n"
    "      %sz = tensor.splat %zero : tensor<8x16xf32>\n"
    "      %qk = linalg.matmul ins(%q, %k : tensor<8x64xf32>, tensor<64x16xf32>) outs(%sz : tensor<8x16xf32>) -> tensor<8x16xf32>\n"
    "      %st = tensor.splat %scale : tensor<8x16xf32>\n"
    "      %s = arith.mulf %st, %qk : tensor<8x16xf32>\n"
    "      %se = tensor.empty() : tensor<8x16xf32>\n"
    "      %sm = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = [\"parallel\", \"parallel\"]}\n"
    "          ins(%s : tensor<8x16xf32>) outs(%se : tensor<8x16xf32>) {\n"
    "        ^bb0(%x: f32, %o: f32):\n"
    "          %r = linalg.index 0 : index\n"
    "          %c = linalg.index 1 : index\n"
    "          %r4 = arith.divui %r, %c4 : index\n"
    "          %qp = arith.addi %t0, %r4 : index\n"
    "          %qa = arith.addi %ctx, %qp : index\n"
    "          %col = arith.addi %k0, %c : index\n"
    "          %in = arith.cmpi ule, %col, %qa : index\n"
    "          %y = arith.select %in, %x, %ninf : f32\n"
    "          linalg.yield %y : f32\n"
    "      } -> tensor<8x16xf32>\n"
    "      %rm = linalg.reduce ins(%sm : tensor<8x16xf32>) outs(%m0 : tensor<8xf32>) dimensions = [1]\n"
    "        (%a: f32, %b: f32) { %mx = arith.maximumf %a, %b : f32\n linalg.yield %mx : f32 }\n"
    "      %me = tensor.empty() : tensor<8xf32>\n"
    "      %mj = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = [\"parallel\"]}\n"
    "          ins(%mi, %rm : tensor<8xf32>, tensor<8xf32>) outs(%me : tensor<8xf32>) {\n"
    "        ^bb0(%a: f32, %b: f32, %o: f32):\n"
    "          %mx = arith.maximumf %a, %b : f32\n"
    "          linalg.yield %mx : f32\n"
    "      } -> tensor<8xf32>\n"
    "      %pe = tensor.empty() : tensor<8x16xf32>\n"
    "      %pj = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = [\"parallel\", \"parallel\"]}\n"
    "          ins(%sm, %mj : tensor<8x16xf32>, tensor<8xf32>) outs(%pe : tensor<8x16xf32>) {\n"
    "        ^bb0(%x: f32, %m: f32, %o: f32):\n"
    "          %d = arith.subf %x, %m : f32\n"
    "          %e = math.exp %d : f32\n"
    "          linalg.yield %e : f32\n"
    "      } -> tensor<8x16xf32>\n"
    "      %lj = linalg.reduce ins(%pj : tensor<8x16xf32>) outs(%l0 : tensor<8xf32>) dimensions = [1]\n"
    "        (%a: f32, %b: f32) { %sum = arith.addf %a, %b : f32\n linalg.yield %sum : f32 }\n"
    "      %ae = tensor.empty() : tensor<8xf32>\n"
    "      %al = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = [\"parallel\"]}\n"
    "          ins(%mi, %mj : tensor<8xf32>, tensor<8xf32>) outs(%ae : tensor<8xf32>) {\n"
    "        ^bb0(%a: f32, %b: f32, %o: f32):\n"
    "          %d = arith.subf %a, %b : f32\n"
    "          %e = math.exp %d : f32\n"
    "          linalg.yield %e : f32\n"
    "      } -> tensor<8xf32>\n"
    "      %xe = tensor.empty() : tensor<8x64xf32>\n"
    "      %as = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = [\"parallel\", \"parallel\"]}\n"
    "          ins(%ai, %al : tensor<8x64xf32>, tensor<8xf32>) outs(%xe : tensor<8x64xf32>) {\n"
    "        ^bb0(%x: f32, %f: f32, %o: f32):\n"
    "          %y = arith.mulf %x, %f : f32\n"
    "          linalg.yield %y : f32\n"
    "      } -> tensor<8x64xf32>\n"
    "      %an = linalg.matmul ins(%pj, %v : tensor<8x16xf32>, tensor<16x64xf32>) outs(%as : tensor<8x64xf32>) -> tensor<8x64xf32>\n"
    "      %le = tensor.empty() : tensor<8xf32>\n"
    "      %ln = linalg.generic {indexing_maps = [#id1, #id1, #id1, #id1], iterator_types = [\"parallel\"]}\n"
    "          ins(%li, %al, %lj : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) outs(%le : tensor<8xf32>) {\n"
    "        ^bb0(%l: f32, %f: f32, %n: f32, %o: f32):\n"
    "          %y = arith.mulf %l, %f : f32\n"
    "          %z = arith.addf %y, %n : f32\n"
    "          linalg.yield %z : f32\n"
    "      } -> tensor<8xf32>\n"
    "      scf.yield %mj, %ln, %an : tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>\n"
    "    }\n"
    "    %oe = tensor.empty() : tensor<8x64xf32>\n"
    "    %o = linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = [\"parallel\", \"parallel\"]}\n"
    "        ins(%af, %lf : tensor<8x64xf32>, tensor<8xf32>) outs(%oe : tensor<8x64xf32>) {\n"
    "      ^bb0(%x: f32, %l: f32, %u: f32):\n"
    "        %y = arith.divf %x, %l : f32\n"
    "        linalg.yield %y : f32\n"
    "    } -> tensor<8x64xf32>\n"
    "    %o16 = arith.truncf %o : tensor<8x64xf32> to tensor<8x64xf16>\n"
    "    %o3 = tensor.expand_shape %o16 [[0, 1], [2]] output_shape [2, 4, 64] : tensor<8x64xf16> into tensor<2x4x64xf16>\n"
    "    %ot = ktdp.construct_access_tile %ov[%t0, %c4, %c0] {} : memref<4x8x64xf16> -> !ktdp.access_tile<2x4x64xindex>\n"
    "    ktdp.store %o3, %ot : tensor<2x4x64xf16>, !ktdp.access_tile<2x4x64xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* The attention of query row (token t, head 4 + h) in double: softmax over
 * the 32 keys of scale * q.k, keys past ctx + t masked, times V. */
static void attn_reference(const float *q, const float *k, const float *v, int ctx, double scale, int t, int h, double *out)
{
    double s[32], mx = -INFINITY, sum = 0;
    for (int j = 0; j < 32; j++) {
        double d = 0;
        for (int e = 0; e < 64; e++) d += (double)q[(t * 8 + 4 + h) * 64 + e] * k[j * 64 + e];
        s[j] = j > ctx + t ? -INFINITY : d * scale;
        mx = fmax(mx, s[j]);
    }
    for (int j = 0; j < 32; j++) sum += s[j] = exp(s[j] - mx);
    for (int e = 0; e < 64; e++) {
        out[e] = 0;
        for (int j = 0; j < 32; j++) out[e] += s[j] / sum * v[j * 64 + e];
    }
}

/* Worst error of the attention program's output against the reference, at
 * context ctx; -1 on NaN or infinity. */
static double run_attention(int ctx)
{
    char path[512], err[512];
    rt_device *dev;
    kt_arg args[] = {{"ctx", ctx}, {"scale", 0.125}};
    rt_program *prog = tu_ktir_load(attn_prog, args, 2, &cfg4, path, sizeof path, &dev);
    static float q[4 * 8 * 64], k[32 * 64], v[32 * 64], o[4 * 8 * 64];
    for (int i = 0; i < 4 * 8 * 64; i++) q[i] = (float)((i * 37) % 61 - 30) / 16; /* in [-1.875, 1.875], exact in DL16 */
    for (int i = 0; i < 32 * 64; i++)
        k[i] = (float)((i * 53) % 41 - 20) / 16, v[i] = (float)((i * 29) % 33 - 16) / 16;
    CU_ASSERT_EQUAL(rt_set_input(prog, "q_ptr", q, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "k_ptr", k, err, sizeof err), 0);
    CU_ASSERT_EQUAL(rt_set_input(prog, "v_ptr", v, err, sizeof err), 0);
    rt_run_result res;
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "o_ptr", o, err, sizeof err), 0);
    double worst = 0, want[64];
    for (int t = 0; t < 4; t++)
        for (int h = 0; h < 4; h++) {
            attn_reference(q, k, v, ctx, 0.125, t, h, want);
            for (int e = 0; e < 64; e++) {
                double got = o[(t * 8 + 4 + h) * 64 + e];
                if (!isfinite(got)) worst = -1;
                if (worst >= 0) worst = fmax(worst, fabs(got - want[e]));
            }
        }
    rt_unload(prog);
    rt_close(dev);
    remove(path);
    return worst;
}

/* Q, K and V are exact in DL16 and the PT sums in fp32, so S is exact to
 * fp32; what rounds is P (fp32 softmax weights, rounded to DL16 as the PT's
 * operand: 2^-10 relative each) and the output (DL16, 2^-10 relative, then
 * fp16 on the host, 2^-11): with |V| <= 1 the error is below 2^-10 + 2^-10
 * + 2^-11 of 1, so 3e-3.  Three contexts: every key of the second tile
 * masked for every row (ctx 3: -inf everywhere, exp gives 0, no NaN), the
 * mask's edge inside the second tile (ctx 20) and nothing masked (ctx 40). */
static void test_causal_attention_with_an_online_softmax_matches_the_reference(void)
{
    static const int ctxs[] = {3, 20, 40};
    for (int i = 0; i < 3; i++) {
        double worst = run_attention(ctxs[i]);
        if (worst < 0 || worst > 3e-3) printf("\n  ctx %d: worst error %g\n", ctxs[i], worst);
        CU_ASSERT(worst >= 0 && worst <= 3e-3);
    }
}

/* The mask is known per element: for ctx 20, core 0's second tile masks
 * keys 21-31 in rows 0-3 (query position 20) and 22-31 in rows 4-7 (21),
 * each one sfp.rst of -inf over its run of lanes and rows; ctx 3 masks keys
 * 4-15 and 5-15 of the first tile the same way and the whole second tile
 * (the select is the constant itself: no element moves); ctx 40 masks
 * nothing.  The transposes of K are the rst of 64 lanes. */
static void test_a_mask_known_per_element_is_one_rst_per_run_of_rows(void)
{
    char path[512], err[512];
    static const int ctxs[] = {20, 40, 3}, want_lanes[] = {4 * 11 + 4 * 10, 0, 4 * 12 + 4 * 11};
    int code;
    for (int k = 0; k < 3; k++) {
        kt_arg args[] = {{"ctx", ctxs[k]}, {"scale", 0.125}};
        tu_write_tmpfile(".mlir", attn_prog, strlen(attn_prog), path, sizeof path);
        isa_program *p = kt_compile_file(path, args, 2, &cfg4, err, sizeof err, &code, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        int runs = 0, lanes = 0;
        for (size_t i = 0; i < p->cores[0].n; i++) {
            const isa_insn *in = &p->cores[0].insns[i];
            if (in->op != ISA_OP_SFP_RST || in->vl == 64) continue;

            runs++, lanes += (int)(in->vl * in->n[0]);
            CU_ASSERT(in->n[0] == 4 && in->as[0] == 0 && in->bs[0] == 0); /* 4 rows, one element read for all */
        }
        CU_ASSERT_EQUAL(runs, want_lanes[k] ? 2 : 0);
        CU_ASSERT_EQUAL(lanes, want_lanes[k]);
        isa_program_free(p);
        remove(path);
    }
}

static void expect_refused(const char *text, const char *want)
{
    char path[512], err[512] = "";
    int code = 0;
    kt_arg args[] = {{"ctx", 20}, {"scale", 0.125}};
    tu_write_tmpfile(".mlir", text, strlen(text), path, sizeof path);
    isa_program *p = kt_compile_file(path, args, 2, &cfg4, err, sizeof err, &code, NULL);
    CU_ASSERT_PTR_NULL(p);
    isa_program_free(p);
    CU_ASSERT_EQUAL(code, KT_EXIT_REFUSED);
    if (!strstr(err, want)) printf("\n  got %s\n  want %s\n", err, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    remove(path);
}

static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t n = 0, lf = strlen(from), lt = strlen(to);
    for (const char *at = strstr(text, from); at; at = strstr(at + lf, from)) n++;
    char *r = malloc(strlen(text) + n * lt + 1), *w = r;
    for (const char *at; (at = strstr(text, from)); text = at + lf) {
        memcpy(w, text, (size_t)(at - text));
        w += at - text;
        memcpy(w, to, lt);
        w += lt;
    }
    strcpy(w, text);
    return r;
}

/* What the compiler does not take is refused with its line: an infinite
 * constant in an f16 select (DL16's one pattern for infinity and NaN), a
 * generic with a reduction iterator. */
static void test_what_the_attention_constructs_do_not_cover_is_refused(void)
{
    char *f16 = replace_all(attn_prog, "xf32", "xf16"); /* the same program in f16 */
    expect_refused(f16, "not supported: an infinite constant in an f16 select");
    char *red = replace_all(attn_prog, "iterator_types = [\"parallel\"]}\n          ins(%mi, %rm",
                            "iterator_types = [\"reduction\"]}\n          ins(%mi, %rm");
    expect_refused(red, "not supported: a linalg.generic with iterators other than parallel");
    free(f16), free(red);
}

int main(void)
{
    tu_config("spyre-4core", &cfg4);
    static const tu_test tests[] = {
        {"a_tile_of_two_row_levels_moves_every_row_and_nothing_else",
         test_a_tile_of_two_row_levels_moves_every_row_and_nothing_else},
        {"extf_and_truncf_convert_every_element_between_f16_and_f32",
         test_extf_and_truncf_convert_every_element_between_f16_and_f32},
        {"causal_attention_with_an_online_softmax_matches_the_reference",
         test_causal_attention_with_an_online_softmax_matches_the_reference},
        {"a_mask_known_per_element_is_one_rst_per_run_of_rows", test_a_mask_known_per_element_is_one_rst_per_run_of_rows},
        {"what_the_attention_constructs_do_not_cover_is_refused", test_what_the_attention_constructs_do_not_cover_is_refused},
        {NULL, NULL},
    };
    return tu_run("ktir_attention", tests);
}
