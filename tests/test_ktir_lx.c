/* Tests of KTIR ct_local memory views (ktir/lxview.c): tensors resident in a
 * core's LX when the program starts, read by their own core and, over the
 * ring, by others; column-major partitions; stores of several cores to the
 * same sticks in core order (ktir/stage.c); the LX placement through the
 * program's tensor table, its ELF and assembly forms. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ktir.h"
#include "rt.h"
#include "testutil.h"

static chip_config cfg4;

/* A is 64 x 80: rows 0..15 in HBM (row-major, rows not on sticks), rows
 * 16..47 column-major (strides [1, 32]) in core 0's LX at element 0, rows
 * 48..63 row-major with a row stride of 128 in core 2's LX at element 1024.
 * Each of the 3 tiles loads A whole, stores A * (tile + 1) into its own
 * block of C and into all of B: in core order B keeps tile 2's values. */
static const char *dist_prog =
    "#h = affine_set<(d0, d1) : (d0 >= 0, -d0 + 15 >= 0, d1 >= 0, -d1 + 79 >= 0)>\n"
    "#l0 = affine_set<(d0, d1) : (d0 >= 16, -d0 + 47 >= 0, d1 >= 0, -d1 + 79 >= 0)>\n"
    "#l2 = affine_set<(d0, d1) : (d0 >= 48, -d0 + 63 >= 0, d1 >= 0, -d1 + 79 >= 0)>\n"
    "module {\n"
    "  func.func @dist(%a: index, %b: index, %c: index) attributes {grid = [3]} {\n"
    "    %id = ktdp.get_compute_tile_id : index\n"
    "    %c0 = arith.constant 0 : index\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %c64 = arith.constant 64 : index\n"
    "    %lx0 = arith.constant 0 : index\n"
    "    %lx2 = arith.constant 1024 : index\n"
    "    %ah = ktdp.construct_memory_view %a, sizes: [16, 80], strides: [80, 1] {\n"
    "      coordinate_set = #h, memory_space = #ktdp.memory_space<global>} : memref<16x80xf16>\n"
    "    %a0 = ktdp.construct_memory_view %lx0, sizes: [32, 80], strides: [1, 32] {\n"
    "      coordinate_set = #l0, memory_space = #ktdp.memory_space<ct_local, ct_id = 0>} : memref<32x80xf16>\n"
    "    %a2 = ktdp.construct_memory_view %lx2, sizes: [16, 80], strides: [128, 1] {\n"
    "      coordinate_set = #l2, memory_space = #ktdp.memory_space<ct_local, ct_id = 2>} : memref<16x80xf16>\n"
    "    %av = ktdp.construct_distributed_memory_view (%ah, %a0, %a2 : memref<16x80xf16>, memref<32x80xf16>,\n"
    "      memref<16x80xf16>) : memref<64x80xf16>\n"
    "    %bv = ktdp.construct_memory_view %b, sizes: [64, 80], strides: [80, 1] {} : memref<64x80xf16>\n"
    "    %cv = ktdp.construct_memory_view %c, sizes: [192, 80], strides: [80, 1] {} : memref<192x80xf16>\n"
    "    %at = ktdp.construct_access_tile %av[%c0, %c0] {} : memref<64x80xf16> -> !ktdp.access_tile<64x80xindex>\n"
    "    %bt = ktdp.construct_access_tile %bv[%c0, %c0] {} : memref<64x80xf16> -> !ktdp.access_tile<64x80xindex>\n"
    "    %row = arith.muli %id, %c64 : index\n"
    "    %ct = ktdp.construct_access_tile %cv[%row, %c0] {} : memref<192x80xf16> -> !ktdp.access_tile<64x80xindex>\n"
    "    %x = ktdp.load %at : !ktdp.access_tile<64x80xindex> -> tensor<64x80xf16>\n"
    "    %k1 = arith.addi %id, %c1 : index\n"
    "    %ki = arith.index_cast %k1 : index to i32\n"
    "    %k = arith.sitofp %ki : i32 to f16\n"
    "    %s = tensor.splat %k : tensor<64x80xf16>\n"
    "    %y = arith.mulf %x, %s : tensor<64x80xf16>\n"
    "    ktdp.store %y, %ct : tensor<64x80xf16>, !ktdp.access_tile<64x80xindex>\n"
    "    ktdp.store %y, %bt : tensor<64x80xf16>, !ktdp.access_tile<64x80xindex>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* A's element (i, j): eighths in [-2, 2], exact in DL16, and so are their
 * products by 1, 2 and 3. */
static float a_at(int i, int j) { return (float)((i * 7 + j * 3) % 33 - 16) / 8; }

static isa_program *compile(const char *text, char *path, size_t len, char *err, size_t errlen, int *code)
{
    kt_arg args[] = {{"a", 0}, {"b", 2048}, {"c", 8192}};
    tu_write_tmpfile(".mlir", text, strlen(text), path, len);
    return kt_compile_file(path, args, 3, &cfg4, err, errlen, code, NULL);
}

/* The inputs: A's HBM rows in "hbm", and the LX inputs as the program's
 * layout has them: lx0_0 column-major (element i + 32 j), lx2_1024 rows of
 * 128 (the gaps hold -7, never read). */
static void seed(rt_program *prog, char *err, size_t errlen)
{
    static float hbm[8192 + 192 * 80], lx0[32 + 79 * 32], lx2[15 * 128 + 80];
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 80; j++) hbm[i * 80 + j] = a_at(i, j);
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 80; j++) lx0[i + 32 * j] = a_at(16 + i, j);
    for (int k = 0; k < 15 * 128 + 80; k++) lx2[k] = -7;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 80; j++) lx2[i * 128 + j] = a_at(48 + i, j);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "hbm", hbm, ISA_HT_F32, err, errlen), 0);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "lx0_0", lx0, ISA_HT_F32, err, errlen), 0);
    CU_ASSERT_EQUAL(rt_write_tensor(prog, "lx2_1024", lx2, ISA_HT_F32, err, errlen), 0);
}

/* Elements of B and C from A's row r0 on that are not what core order gives. */
static int bad_rows(rt_program *prog, int r0)
{
    static float out[8192 + 192 * 80];
    char err[256];
    CU_ASSERT_EQUAL(rt_read_tensor(prog, "hbm", out, err, sizeof err), 0);
    int bad = 0;
    for (int i = r0; i < 64; i++)
        for (int j = 0; j < 80; j++) {
            bad += out[2048 + i * 80 + j] != 3 * a_at(i, j); /* the last core's */
            for (int t = 0; t < 3; t++) bad += out[8192 + (t * 64 + i) * 80 + j] != (t + 1) * a_at(i, j);
        }
    return bad;
}

static void test_lx_partitions_read_by_every_core_land_in_order(void)
{
    char path[512], err[512];
    int code = 0;
    isa_program *p = compile(dist_prog, path, sizeof path, err, sizeof err, &code);
    if (!p) printf("\n%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int l0 = isa_program_find_tensor(p, "lx0_0"), l2 = isa_program_find_tensor(p, "lx2_1024");
    CU_ASSERT_FATAL(l0 >= 0 && l2 >= 0);
    CU_ASSERT(p->tensors[l0].flags & ISA_TF_LX && p->tensors[l0].lx_core == 0 && p->tensors[l0].dram_off == 0);
    CU_ASSERT(p->tensors[l2].lx_core == 2 && p->tensors[l2].dram_off == 2048 && p->tensors[l2].role == ISA_ROLE_INPUT);
    int sends = 0;
    for (int c = 0; c < 3; c++)
        for (size_t i = 0; i < p->cores[c].n; i++) sends += p->cores[c].insns[i].op == ISA_OP_RING_SEND;
    CU_ASSERT_EQUAL(sends, 4); /* each owner to the two other tiles */
    rt_device *dev = rt_open_config(&cfg4, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dev);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    seed(prog, err, sizeof err);
    rt_run_result res;
    int rc = rt_launch(prog, &res);
    if (rc) rt_run_format(&res, err, sizeof err), printf("\n%s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(bad_rows(prog, 0), 0);
    /* B written once: the two earlier cores' stores of it are dropped */
    CU_ASSERT_EQUAL(res.stats.dram_bytes_written, (uint64_t)(64 * 80 * 2 * 4));
    /* The LX inputs go in again at every launch, whatever used the LX
     * since ("hbm", an output, is not uploaded again: only the rows from LX count). */
    memset(sim_lx(rt_sim(dev), 0), 0x7f, cfg4.lx_bytes);
    memset(sim_lx(rt_sim(dev), 2), 0x7f, cfg4.lx_bytes);
    CU_ASSERT_EQUAL_FATAL(rt_launch(prog, &res), 0);
    CU_ASSERT_EQUAL(bad_rows(prog, 16), 0);
    rt_unload(prog);
    rt_close(dev);
    remove(path);
}

static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    char *r = malloc(strlen(text) + strlen(to) + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    memcpy(r, text, (size_t)(at - text));
    strcpy(r + (at - text), to);
    strcat(r, at + strlen(from));
    return r;
}

/* A core that loads B after the stores keeps every store; the simulator's
 * race check reports the cores' unordered writes of the same sticks. */
static void test_overlapping_stores_a_core_loads_stay_a_race(void)
{
    char path[512], err[512];
    int code = 0;
    char *text = replace(dist_prog, "    return\n", "    %z = ktdp.load %bt : !ktdp.access_tile<64x80xindex> -> tensor<64x80xf16>\n"
                                                  "    ktdp.store %z, %ct : tensor<64x80xf16>, !ktdp.access_tile<64x80xindex>\n"
                                                  "    return\n");
    isa_program *p = compile(text, path, sizeof path, err, sizeof err, &code);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    rt_device *dev = rt_open_config(&cfg4, err, sizeof err);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prog);
    seed(prog, err, sizeof err);
    rt_run_result res;
    CU_ASSERT_NOT_EQUAL(rt_launch(prog, &res), 0);
    rt_run_format(&res, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "race"));
    rt_unload(prog);
    rt_close(dev);
    free(text);
    remove(path);
}

static void expect_error(const char *from, const char *to, int want_code, const char *want)
{
    char path[512], err[512] = "";
    int code = 0;
    char *text = replace(dist_prog, from, to);
    isa_program *p = compile(text, path, sizeof path, err, sizeof err, &code);
    CU_ASSERT_PTR_NULL(p);
    isa_program_free(p);
    CU_ASSERT_EQUAL(code, want_code);
    if (!strstr(err, want) || strchr(err, '\n')) {
        printf("\n  got %s\n  want %s\n", err, want);
        CU_FAIL("message");
    }
    free(text);
    remove(path);
}

static void test_what_ct_local_views_cannot_do_is_refused_in_one_line(void)
{
    expect_error("ktdp.store %y, %bt", "ktdp.store %y, %at", 2, "not supported: a store to a ct_local memory view");
    expect_error("ct_id = 2", "ct_id = 3", 2, "ct_id = 3: the grid has 3 compute tiles");
    expect_error("%lx2 = arith.constant 1024", "%lx2 = arith.constant 1000", 2, "not a stick of the LX");
    expect_error("%lx2 = arith.constant 1024", "%lx2 = arith.constant 1024000", 2, "not a stick of the LX");
    expect_error("ct_local, ct_id = 2", "ct_local, ct_id = 0", 2, "overlap in the LX of core 0");
    expect_error("memory_space<ct_local, ct_id = 2>", "memory_space<shared>", 2, "memory views in shared");
}

/* Without ct_id a ct_local view is the executing core's LX: one tensor per core. */
static void test_a_ct_local_view_without_ct_id_is_each_cores_own(void)
{
    char path[512], err[512];
    int code = 0;
    char *own = replace(dist_prog, "ct_local, ct_id = 2", "ct_local");
    char *text = replace(own, "%lx2 = arith.constant 1024", "%lx2 = arith.constant 4096");
    free(own);
    isa_program *p = compile(text, path, sizeof path, err, sizeof err, &code);
    if (!p) printf("\n%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int c = 0; c < 3; c++) {
        char name[32];
        snprintf(name, sizeof name, "lx%d_4096", c);
        int i = isa_program_find_tensor(p, name);
        CU_ASSERT(i >= 0 && p->tensors[i].lx_core == c);
    }
    isa_program_free(p);
    free(text);
    remove(path);
}

/* The LX placement survives the ELF and the assembly text. */
static void test_lx_placement_round_trips_through_elf_and_assembly(void)
{
    char path[512], elf[512], err[512];
    int code = 0;
    isa_program *p = compile(dist_prog, path, sizeof path, err, sizeof err, &code);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    tu_tmpfile(".elf", elf, sizeof elf);
    CU_ASSERT_EQUAL_FATAL(isa_elf_write(p, elf, err, sizeof err), 0);
    isa_program *q = isa_elf_read(elf, err, sizeof err);
    if (!q) printf("\n%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    char *text = isa_disassemble(q);
    isa_program *r = isa_assemble(text, "round.s", err, sizeof err);
    if (!r) printf("\n%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    for (isa_program *x = q; x; x = x == q ? r : NULL) {
        int i = isa_program_find_tensor(x, "lx2_1024");
        CU_ASSERT(i >= 0 && (x->tensors[i].flags & ISA_TF_LX) && x->tensors[i].lx_core == 2 &&
                  x->tensors[i].dram_off == 2048);
        CU_ASSERT_EQUAL(x->dram_bytes, p->dram_bytes);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(text, " lx=2\n"));
    char *bad = replace(text, " lx=2\n", " lx=7\n");
    isa_program *s = isa_assemble(bad, "bad.s", err, sizeof err);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "in the LX of core 7"));
    free(bad), free(text);
    isa_program_free(p), isa_program_free(q), isa_program_free(r);
    remove(elf), remove(path);
}

int main(void)
{
    tu_config("spyre-4core", &cfg4);
    static const tu_test tests[] = {
        {"lx_partitions_read_by_every_core_land_in_order", test_lx_partitions_read_by_every_core_land_in_order},
        {"overlapping_stores_a_core_loads_stay_a_race", test_overlapping_stores_a_core_loads_stay_a_race},
        {"what_ct_local_views_cannot_do_is_refused_in_one_line", test_what_ct_local_views_cannot_do_is_refused_in_one_line},
        {"a_ct_local_view_without_ct_id_is_each_cores_own", test_a_ct_local_view_without_ct_id_is_each_cores_own},
        {"lx_placement_round_trips_through_elf_and_assembly", test_lx_placement_round_trips_through_elf_and_assembly},
        {NULL, NULL},
    };
    return tu_run("ktir_lx", tests);
}
