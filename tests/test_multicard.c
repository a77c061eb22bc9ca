/* test_multicard.c: several cards (docs/multicard.md): the system files,
 * the ring collectives' cost and values between simulated cards, a card
 * that fails stopping the others, and tensor-parallel runs of the
 * exported transformer layers against the unsplit reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "cc.h"
#include "rt.h"
#include "testutil.h"

static void load_system(const char *name, chip_system *sys)
{
    char err[512];
    char *path = chip_system_path(name);
    int rc = chip_system_load(path, sys, err, sizeof err);
    free(path);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_FATAL(rc == 0);
}

static void test_system_files_name_cards_chip_and_link(void)
{
    chip_system s4, s8;
    load_system("spyre-x4", &s4);
    load_system("spyre-x8", &s8);
    CU_ASSERT_EQUAL(s4.cards, 4);
    CU_ASSERT_EQUAL(s8.cards, 8);
    CU_ASSERT_STRING_EQUAL(s4.chip.name, "spyre");
    CU_ASSERT_EQUAL(s4.chip.cores, 32);
    /* PCIe Gen5 x16: 63 GB/s per direction raw, 80% of it assumed usable */
    CU_ASSERT_DOUBLE_EQUAL(s4.link_bytes_per_s, 50e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(s8.link_latency_ns, 2000, 1e-9);
}

static void test_system_file_errors_name_the_line(void)
{
    char path[512], err[512];
    chip_system s;
    const char *bad = "name = x\nchip = spyre\ncards = 0\nlink_bytes_per_s = 1e9\nlink_latency_ns = 1\n";
    tu_write_tmpfile(".sys", bad, strlen(bad), path, sizeof path);
    CU_ASSERT_EQUAL(chip_system_load(path, &s, err, sizeof err), -1);
    TU_ASSERT_CONTAINS(err, ":3: cards = 0: must be an integer in [1, 64]");
    remove(path);
    const char *missing = "name = x\nchip = spyre\ncards = 2\nlink_bytes_per_s = 1e9\n";
    tu_write_tmpfile(".sys", missing, strlen(missing), path, sizeof path);
    CU_ASSERT_EQUAL(chip_system_load(path, &s, err, sizeof err), -1);
    TU_ASSERT_CONTAINS(err, "missing key 'link_latency_ns'");
    remove(path);
    const char *chip = "name = x\nchip = nosuchchip\n";
    tu_write_tmpfile(".sys", chip, strlen(chip), path, sizeof path);
    CU_ASSERT_EQUAL(chip_system_load(path, &s, err, sizeof err), -1);
    TU_ASSERT_CONTAINS(err, ":2: chip = nosuchchip: ");
    remove(path);
}

/* docs/multicard.md holds the table of a system file's keys as the key list makes it. */
static void test_docs_hold_the_system_keys_table(void)
{
    char *table = NULL, path[600];
    size_t len = 0;
    FILE *f = open_memstream(&table, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    chip_system_doc(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/docs/multicard.md", SPYRE_SOURCE_DIR);
    char *doc = tu_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    CU_ASSERT_PTR_NOT_NULL(strstr(doc, table));
    free(doc);
    free(table);
}

/* The ring formulas written out here, apart from rt_coll_ns. */
static void test_ring_cost_formulas(void)
{
    chip_system s;
    load_system("spyre-x4", &s);
    double B = s.link_bytes_per_s, L = s.link_latency_ns, S = 1 << 20;
    for (int n = 2; n <= 8; n *= 2) {
        double ar = 2.0 * (n - 1) / n * S / B * 1e9 + 2.0 * (n - 1) * L;
        double one = (n - 1.0) / n * S / B * 1e9 + (n - 1.0) * L;
        CU_ASSERT_DOUBLE_EQUAL(rt_coll_ns(&s, n, RT_COLL_ALLREDUCE, (uint64_t)S), ar, ar * 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(rt_coll_ns(&s, n, RT_COLL_ALLGATHER, (uint64_t)S), one, one * 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(rt_coll_ns(&s, n, RT_COLL_REDUCE_SCATTER, (uint64_t)S), one, one * 1e-12);
    }
    /* 4 cards, 1 MiB: 2*3/4 * 1048576 B / 50 GB/s = 31,457.28 ns on the links + 6 x 2 us */
    CU_ASSERT_DOUBLE_EQUAL(rt_coll_ns(&s, 4, RT_COLL_ALLREDUCE, 1 << 20), 43457.28, 1e-6);
    CU_ASSERT_EQUAL(rt_coll_ns(&s, 1, RT_COLL_ALLREDUCE, 1 << 20), 0);
}

#define ROWS 64
#define COLS 256

/* Card c's graph: y = coll(x * (c + 1)) + 1, the collective `op`. */
static gr_graph *coll_graph(const char *op, int ncards)
{
    char text[1024];
    int out_rows = !strcmp(op, "all_reduce") ? ROWS : !strcmp(op, "all_gather_into_tensor") ? ROWS * ncards
                                                                                             : ROWS / ncards;
    const char *args = !strcmp(op, "all_reduce") ? "\"sum\", \"tp\"" : !strcmp(op, "all_gather_into_tensor")
                                                                         ? "%d, \"tp\""
                                                                         : "\"sum\", %d, \"tp\"";
    char a[64];
    snprintf(a, sizeof a, args, ncards);
    snprintf(text, sizeof text,
             "graph coll\ninput %%x: f32[%d, %d]\n%%a: f32[%d, %d] = aten.mul.Tensor(%%x, %%x)\n"
             "%%b: f32[%d, %d] = _c10d_functional.%s.default(%%a, %s)\n"
             "%%c: f32[%d, %d] = aten.add.Tensor(%%b, 1.0)\noutput %%c\n",
             ROWS, COLS, ROWS, COLS, out_rows, COLS, op, a, out_rows, COLS);
    char err[512];
    gr_graph *g = gr_graph_parse(text, "coll", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    return g;
}

typedef struct {
    int n;
    rt_device *dev[8];
    rt_program *prog[8];
    rt_run_result res[8];
    void *link;
} cards;

/* n cards of spyre-x4's link with the 4-core chip (a small, fast chip:
 * the link is what is measured), each running g with inputs from seed c. */
static void cards_open(cards *k, const chip_system *sys, int n, const gr_graph *g)
{
    char err[512];
    memset(k, 0, sizeof *k);
    k->n = n;
    k->link = rt_threads_link_new(sys, n);
    for (int c = 0; c < n; c++) {
        k->dev[c] = rt_open_config(&sys->chip, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(k->dev[c]);
        rt_set_link(k->dev[c], &rt_threads_link_ops, k->link, c);
        cc_compile_opts o = {.target = &sys->chip};
        cc_result *r = cc_compile(g, &o, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        k->prog[c] = rt_load_program(k->dev[c], cc_result_take_program(r), err, sizeof err);
        cc_result_free(r);
        CU_ASSERT_PTR_NOT_NULL_FATAL(k->prog[c]);
        CU_ASSERT_EQUAL_FATAL(rt_fill_inputs(k->prog[c], (uint64_t)c + 1, err, sizeof err), 0);
    }
}

static void cards_close(cards *k)
{
    for (int c = 0; c < k->n; c++) {
        rt_unload(k->prog[c]);
        rt_close(k->dev[c]);
    }
    rt_threads_link_free(k->link);
}

static void small_system(chip_system *sys)
{
    load_system("spyre-x4", sys);
    tu_config("spyre-4core", &sys->chip);
}

/* x*x summed over the cards (in fp32, as DL16 products: the device's
 * tolerance below) and the simulated collective's cycles against the formula. */
static void test_allreduce_cost_matches_formula_and_values_sum(void)
{
    chip_system sys;
    small_system(&sys);
    for (int n = 2; n <= 4; n += 2) {
        gr_graph *g = coll_graph("all_reduce", n);
        cards k;
        cards_open(&k, &sys, n, g);
        CU_ASSERT_EQUAL(rt_launch_cards(k.prog, n, k.res), 0);
        float *y = malloc(ROWS * COLS * sizeof *y), *x = malloc(ROWS * COLS * sizeof *x);
        double want = 0;
        for (int c = 0; c < n; c++) {
            const isa_program *p = rt_program_isa(k.prog[c]);
            const isa_tensor *t = &p->tensors[isa_program_find_tensor(p, "a")];
            double formula = rt_coll_ns(&sys, n, RT_COLL_ALLREDUCE, t->bytes) * sys.chip.clock_ghz;
            /* every card runs the same program: all arrive together, no wait */
            CU_ASSERT_EQUAL(k.res[c].coll_ops, 1);
            CU_ASSERT(fabs(k.res[c].coll_cycles - formula) <= 0.05 * formula);
            CU_ASSERT(k.res[c].coll_wait_cycles < 0.05 * formula);
            want = formula;
        }
        /* bytes as the formula takes them: DL16 values, 2 bytes each */
        CU_ASSERT(want > 2.0 * (n - 1) / n * ROWS * COLS * 2 / sys.link_bytes_per_s * 1e9 * sys.chip.clock_ghz);
        char err[256];
        CU_ASSERT_EQUAL(rt_read_tensor(k.prog[n - 1], "c", y, err, sizeof err), 0);
        int bad = 0;
        for (int i = 0; i < ROWS * COLS; i++) {
            double s = 1;
            for (int c = 0; c < n; c++) {
                const float *xc = rt_host_tensor(k.prog[c], "x", NULL);
                s += (double)xc[i] * xc[i];
            }
            /* each product and the sum rounded to DL16 (8 bits of mantissa) */
            bad += fabs(y[i] - s) > (n + 2) * 0x1p-8 * (fabs(s) + 1);
        }
        CU_ASSERT_EQUAL(bad, 0);
        free(x);
        free(y);
        cards_close(&k);
        gr_graph_free(g);
    }
}

/* allgather stacks the cards' tensors on dim 0, reduce-scatter gives card
 * c rows [c R/N, (c+1) R/N) of the sum; both cost the formula. */
static void test_allgather_and_reduce_scatter_values_and_cost(void)
{
    chip_system sys;
    small_system(&sys);
    const int n = 4;
    for (int which = 0; which < 2; which++) {
        gr_graph *g = coll_graph(which ? "reduce_scatter_tensor" : "all_gather_into_tensor", n);
        cards k;
        cards_open(&k, &sys, n, g);
        CU_ASSERT_EQUAL_FATAL(rt_launch_cards(k.prog, n, k.res), 0);
        int out_rows = which ? ROWS / n : ROWS * n, bad = 0;
        float *y = malloc((size_t)out_rows * COLS * sizeof *y);
        char err[256];
        for (int c = 0; c < n; c++) {
            CU_ASSERT_EQUAL(rt_read_tensor(k.prog[c], "c", y, err, sizeof err), 0);
            for (int i = 0; i < out_rows * COLS; i++) {
                double s = 1;
                for (int j = 0; j < n; j++) {
                    const float *xj = rt_host_tensor(k.prog[j], "x", NULL);
                    int64_t at = which ? (int64_t)c * out_rows * COLS + i : i % (ROWS * COLS);
                    if (which || j == i / (ROWS * COLS))
                        s += (double)xj[at] * xj[at];
                }
                bad += fabs(y[i] - s) > (n + 2) * 0x1p-8 * (fabs(s) + 1);
            }
            const isa_program *p = rt_program_isa(k.prog[c]);
            const isa_tensor *t = &p->tensors[isa_program_find_tensor(p, which ? "a" : "b")];
            double formula = rt_coll_ns(&sys, n, which ? RT_COLL_REDUCE_SCATTER : RT_COLL_ALLGATHER, t->bytes) *
                             sys.chip.clock_ghz;
            CU_ASSERT(fabs(k.res[c].coll_cycles - formula) <= 0.05 * formula);
        }
        CU_ASSERT_EQUAL(bad, 0);
        free(y);
        cards_close(&k);
        gr_graph_free(g);
    }
}

/* Card 2 stops at its instruction limit: the others end with its message
 * at the collective instead of waiting for it forever. */
static void test_failing_card_stops_every_card(void)
{
    chip_system sys;
    small_system(&sys);
    gr_graph *g = coll_graph("all_reduce", 4);
    cards k;
    cards_open(&k, &sys, 4, g);
    sim_options o = {.values = 1, .max_insns = 5};
    rt_set_options(k.dev[2], &o);
    CU_ASSERT_EQUAL(rt_launch_cards(k.prog, 4, k.res), 4);
    char line[1024];
    rt_run_format(&k.res[0], line, sizeof line);
    TU_ASSERT_CONTAINS(line, "card 2 failed: run: FAULT");
    rt_run_format(&k.res[2], line, sizeof line);
    TU_ASSERT_LACKS(line, "card 2 failed");
    cards_close(&k);
    gr_graph_free(g);
}

/* The exported layers at TP 2 and 4: card 0's output within the unsplit
 * graph's reference tolerance and PyTorch's, every card's the same bits,
 * two allreduces (attention and MLP) on every card. */
static void test_tp_layers_validate_at_2_and_4_cards(void)
{
    static const char *const traces[] = {"llama_tiny", "gpt2_small_block_tiny"};
    static char out[16384];
    for (int t = 0; t < 2; t++)
        for (int n = 2; n <= 4; n += 2) {
            char args[512];
            snprintf(args, sizeof args, "run %s/traces/%s --tp %d --check", SPYRE_SOURCE_DIR, traces[t], n);
            CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
            TU_ASSERT_CONTAINS(out, "card 1: ", "collectives=2 ", "allreduces=2", "within_tol=1.000000",
                               "every card's outputs that are not cut equal to card 0's");
            TU_ASSERT_LACKS(out, "MISMATCH");
        }
}

/* Shard t of card c: rows (dim 0) or columns (dim 1) [lo, lo + n) of the whole tensor w? */
static int is_block(const rt_st_tensor *t, const rt_st_tensor *w, int dim, int64_t lo, int64_t n)
{
    float *a = malloc((size_t)t->numel * sizeof *a), *b = malloc((size_t)w->numel * sizeof *b);
    rt_st_to_f32(t, a);
    rt_st_to_f32(w, b);
    int ok = t->shape[dim] == n && t->shape[!dim] == w->shape[!dim];
    for (int64_t i = 0; ok && i < t->shape[0]; i++)
        for (int64_t j = 0; ok && j < t->shape[1]; j++)
            ok = a[i * t->shape[1] + j] == b[(dim ? i : lo + i) * w->shape[1] + (dim ? lo + j : j)];
    free(a);
    free(b);
    return ok;
}

/* spyre compile --tp 4 -o DIR: the Megatron cut of llama_tiny's weights
 * (4 heads of 16, 2 KV heads, FFN 160): card c holds query head c, KV
 * head c / 2 (shared by two cards), the o_proj columns of its head, 40
 * gate/up rows and the down_proj columns they feed. */
static void test_tp_compile_writes_megatron_shards(void)
{
    char dir[512], args[1200], out[16384], err[512];
    tu_tmpdir(dir, sizeof dir);
    snprintf(args, sizeof args, "compile %s/traces/llama_tiny --tp 4 -o %s/cards", SPYRE_SOURCE_DIR, dir);
    CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "param %q_proj_weight_shard: f32[16, 64] = \"q_proj.weight.shard\"",
                       "_c10d_functional.all_reduce.default(%mm_3_partial", "allreduces=2");
    char path[700];
    snprintf(path, sizeof path, "%s/traces/llama_tiny/weights.safetensors", SPYRE_SOURCE_DIR);
    rt_st_file *w = rt_st_read(path, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    for (int c = 0; c < 4; c++) {
        snprintf(path, sizeof path, "%s/cards/weights%d.safetensors", dir, c);
        rt_st_file *f = rt_st_read(path, err, sizeof err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT(is_block(rt_st_find(f, "q_proj.weight.shard"), rt_st_find(w, "q_proj.weight"), 0, 16 * c, 16));
        CU_ASSERT(is_block(rt_st_find(f, "k_proj.weight.shard"), rt_st_find(w, "k_proj.weight"), 0, 16 * (c / 2), 16));
        CU_ASSERT(is_block(rt_st_find(f, "v_proj.weight.shard"), rt_st_find(w, "v_proj.weight"), 0, 16 * (c / 2), 16));
        CU_ASSERT(is_block(rt_st_find(f, "o_proj.weight.shard"), rt_st_find(w, "o_proj.weight"), 1, 16 * c, 16));
        CU_ASSERT(is_block(rt_st_find(f, "gate_proj.weight.shard"), rt_st_find(w, "gate_proj.weight"), 0, 40 * c, 40));
        CU_ASSERT(is_block(rt_st_find(f, "up_proj.weight.shard"), rt_st_find(w, "up_proj.weight"), 0, 40 * c, 40));
        CU_ASSERT(is_block(rt_st_find(f, "down_proj.weight.shard"), rt_st_find(w, "down_proj.weight"), 1, 40 * c, 40));
        CU_ASSERT_PTR_NOT_NULL(rt_st_find(f, "rope_cos"));
        rt_st_free(f);
    }
    rt_st_free(w);
    tu_rmtree(dir);
}

/* A cut running into an op the splitter has no rule for is an error naming it. */
static void test_tp_unknown_op_is_named(void)
{
    const char *g = "graph bad\ninput %x: f32[32, 64]\nparam %w1: f32[128, 64] = \"w1\"\n"
                    "param %w2: f32[64, 128] = \"w2\"\n%t: f32[64, 128] = aten.t.default(%w1)\n"
                    "%h: f32[32, 128] = aten.mm.default(%x, %t)\n%c: f32[32, 128] = aten.cumsum.default(%h, 1)\n"
                    "%t2: f32[128, 64] = aten.t.default(%w2)\n%y: f32[32, 64] = aten.mm.default(%c, %t2)\noutput %y\n";
    char path[512], args[700], out[2048];
    tu_write_tmpfile(".txt", g, strlen(g), path, sizeof path);
    snprintf(args, sizeof args, "run %s --tp 2 --no-values", path);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    TU_ASSERT_CONTAINS(out, ":7: aten.cumsum.default: cannot split for tensor parallelism");
    remove(path);
}

/* A host op reading an all_reduce's result takes it from its device
 * tensor: the collective's result is no host op's for the host-only
 * rule (the card faulted: "the collective's tensors are not in the
 * program").  Within the unsplit graph's tolerances at 2 cards. */
static void test_tp_host_op_reading_an_all_reduce_result_validates(void)
{
    const char *g = "graph tp_host\nweights \"" SPYRE_SOURCE_DIR "/traces/llama_tiny/weights.safetensors\"\n"
                    "input %x: f32[8, 64]\nparam %w1: f32[160, 64] = \"gate_proj.weight\"\n"
                    "param %w2: f32[64, 160] = \"down_proj.weight\"\n%t: f32[64, 160] = aten.t.default(%w1)\n"
                    "%h: f32[8, 160] = aten.mm.default(%x, %t)\n%r: f32[8, 160] = aten.relu.default(%h)\n"
                    "%t2: f32[160, 64] = aten.t.default(%w2)\n%y: f32[8, 64] = aten.mm.default(%r, %t2)\n"
                    "%z: f32[8, 64] = aten.logcumsumexp.default(%y, 1)\noutput %z\n";
    char path[512], args[700], out[4096];
    tu_write_tmpfile(".txt", g, strlen(g), path, sizeof path);
    snprintf(args, sizeof args, "run %s --tp 2 --check", path);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "allreduces=1", "check z: ", "not cut equal to card 0's");
    TU_ASSERT_LACKS(out, "MISMATCH", "FAULT");
    remove(path);
}

/* The whole models' steps, KV caches cut by heads with the attention:
 * the logits and the caches' new slices, put together from the cards,
 * within the unsplit graph's tolerances (4 allreduces: 2 layers). */
static void test_tp_whole_models_with_caches_validate(void)
{
    static const char *const steps[] = {"llama_gen/prefill", "llama_gen/decode", "gpt2_gen/prefill", "gpt2_gen/decode"};
    static char out[16384];
    for (int t = 0; t < 4; t++)
        for (int n = 2; n <= 4; n += 2) {
            char args[512];
            snprintf(args, sizeof args, "run %s/traces/%s --tp %d --check", SPYRE_SOURCE_DIR, steps[t], n);
            CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
            TU_ASSERT_CONTAINS(out, "allreduces=4", "expected _unsafe_view", "not cut equal to card 0's");
            TU_ASSERT_LACKS(out, "MISMATCH");
        }
}

/* A decode step whose KV cache is given as inputs and whose new keys and
 * values are outputs (llama.py:llama_tiny_decode, exported here): the
 * caches cut by heads on the way in, the new keys and values put together
 * on the way out, within the reference's and PyTorch's tolerances; and
 * the same with the seeded random inputs (no inputs file). */
static void test_tp_cut_inputs_and_outputs_validate(void)
{
    char dir[512], cmd[2048], out[16384];
    tu_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tools/export.py %s/traces/models/llama.py:llama_tiny_decode -o %s/d "
             "> /dev/null 2>&1", SPYRE_SOURCE_DIR, SPYRE_SOURCE_DIR, dir);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    for (int n = 2; n <= 4; n += 2) {
        snprintf(cmd, sizeof cmd, "run %s/d --tp %d --check", dir, n);
        CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
        TU_ASSERT_CONTAINS(out, "allreduces=2", "expected transpose_2: ", "not cut equal to card 0's");
        TU_ASSERT_LACKS(out, "MISMATCH");
    }
    snprintf(cmd, sizeof cmd, "%s/d/inputs.safetensors", dir);
    CU_ASSERT_EQUAL(remove(cmd), 0);
    snprintf(cmd, sizeof cmd, "run %s/d --tp 4 --check", dir);
    CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "check transpose_2: ", "expected: skipped: no inputs.safetensors",
                       "not cut equal to card 0's");
    TU_ASSERT_LACKS(out, "MISMATCH");
    tu_rmtree(dir);
}

/* Export llama.py:FUNC (a decode step with a mask input) into dir/d; the
 * NaN count of PyTorch's first output, (batch, 1, 64), into *nans. */
static int export_masked_decode(const char *dir, const char *func, int *nans)
{
    char cmd[2048], err[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tools/export.py %s/traces/models/llama.py:%s -o %s/d > /dev/null 2>&1",
             SPYRE_SOURCE_DIR, SPYRE_SOURCE_DIR, func, dir);
    if (system(cmd))
        return -1;
    snprintf(cmd, sizeof cmd, "%s/d/expected.safetensors", dir);
    rt_st_file *f = rt_st_read(cmd, err, sizeof err);
    const rt_st_tensor *t = f ? rt_st_find(f, "output0") : NULL;
    float *v = t ? malloc((size_t)t->numel * sizeof *v) : NULL;
    if (v)
        rt_st_to_f32(t, v);
    *nans = 0;
    for (int64_t i = 0; v && i < t->numel; i++)
        *nans += isnan(v[i]);
    free(v);
    rt_st_free(f);
    return t ? 0 : -1;
}

/* llama.py:FUNC (a decode step with a mask input) alone and at --tp 2,
 * where the KV cache is cut (so every input is written through
 * rt_set_input, not the safetensors loader), against PyTorch's outputs:
 * NaN exactly where PyTorch's first output, (batch, 1, 64), is (want_nans
 * of them; the compare counts a NaN where PyTorch has a number, or a
 * number where it has NaN, as a miss) and the other values within the
 * reference's DL16 error bounds (docs/validation.md). */
static void masked_decode_is_pytorchs(const char *func, int want_nans, const char *within)
{
    char dir[512], cmd[1024], out[16384];
    int nans;
    tu_tmpdir(dir, sizeof dir);
    CU_ASSERT_EQUAL_FATAL(export_masked_decode(dir, func, &nans), 0);
    CU_ASSERT_EQUAL(nans, want_nans);
    for (int n = 1; n <= 2; n++) {
        snprintf(cmd, sizeof cmd, "run %s/d %s --check", dir, n > 1 ? "--tp 2" : "");
        CU_ASSERT_EQUAL(tu_spyre(cmd, out, sizeof out), 0);
        TU_ASSERT_CONTAINS(out, "expected add_6: ", within, "expected transpose_2: ");
        TU_ASSERT_LACKS(out, "MISMATCH");
    }
    TU_ASSERT_CONTAINS(out, "not cut equal to card 0's");
    tu_rmtree(dir);
}

/* The mask drops sequence 0's keys from 10 on and every key of sequence
 * 1: PyTorch's output is NaN across sequence 1's row (its softmax row is
 * -inf throughout), numbers elsewhere.  The cards' inputs are written
 * through rt_set_input: an -inf sent up as DL16's NINF would make
 * sequence 0 NaN too. */
static void test_tp_mask_rows_masked_whole_are_nan_as_pytorch(void)
{
    masked_decode_is_pytorchs("llama_tiny_decode_masked", 64, "within_tol=1.000000 (128/128)");
}

/* Sequences 0 and 1 with a +inf in their mask rows, 2 with a NaN, 3 with
 * finite -1e4s: PyTorch's output is NaN for the first three (inf - inf in
 * the softmax), numbers for the last; the device's +inf stand-in alone
 * gave the first two a one-hot softmax row. */
static void test_tp_mask_rows_with_plus_inf_or_nan_are_nan_as_pytorch(void)
{
    masked_decode_is_pytorchs("llama_tiny_decode_plus_inf_mask", 192, "within_tol=1.000000 (256/256)");
}

/* The number after "key=" on the line of `out` that starts with prefix. */
static double line_value(const char *out, const char *prefix, const char *key)
{
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, prefix, strlen(prefix))) {
            const char *k = strstr(l, key), *e = strchr(l, '\n');
            if (k && (!e || k < e))
                return atof(k + strlen(key));
        }
    CU_FAIL("no such line");
    return -1;
}

/* --tp 4 --trace: one valid trace-event file, a process per card named
 * for it, each card's two allreduces as slices on its host track ending
 * within the card's cycles; --stats-json: each card's statistics as the
 * run's report says them, the totals their maximum (cycles) and sums. */
static void test_tp_trace_has_a_process_per_card_and_stats_totals(void)
{
    char trace[512], stats[512], args[2048];
    static char out[16384];
    tu_tmpfile(".json", trace, sizeof trace);
    tu_tmpfile(".json", stats, sizeof stats);
    snprintf(args, sizeof args, "run %s/traces/llama_tiny --tp 4 --trace %s --trace-level kernel --stats-json %s",
             SPYRE_SOURCE_DIR, trace, stats);
    CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, sizeof out), 0);
    cJSON *t = tu_read_json(trace), *st = tu_read_json(stats);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    int named[4] = {0}, colls[4] = {0}, other = 0;
    double end[4] = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(t, "traceEvents")) {
        int pid = cJSON_GetObjectItem(e, "pid")->valueint;
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring, *name = cJSON_GetObjectItem(e, "name")->valuestring;
        if (pid < 0 || pid > 3) {
            other++;
            continue;
        }
        if (!strcmp(name, "process_name")) {
            char want[32];
            snprintf(want, sizeof want, "card %d", pid);
            named[pid] += !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "name")->valuestring, want);
        }
        if (!strcmp(ph, "X")) {
            double x = cJSON_GetObjectItem(e, "ts")->valuedouble + cJSON_GetObjectItem(e, "dur")->valuedouble;
            end[pid] = x > end[pid] ? x : end[pid];
            colls[pid] += strstr(name, "all_reduce") != NULL;
        }
    }
    CU_ASSERT_EQUAL(other, 0);
    const cJSON *cards = cJSON_GetObjectItem(st, "cards"), *tot = cJSON_GetObjectItem(st, "totals");
    CU_ASSERT_EQUAL_FATAL(cJSON_GetArraySize(cards), 4);
    double max = 0, macs = 0;
    for (int c = 0; c < 4; c++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "card %d: ", c);
        const cJSON *k = cJSON_GetArrayItem(cards, c), *ks = cJSON_GetObjectItem(k, "stats");
        double cyc = cJSON_GetObjectItem(ks, "cycles")->valuedouble;
        CU_ASSERT_EQUAL(named[c], 1);
        CU_ASSERT_EQUAL(colls[c], 2);
        /* the last slice ends by the card's last cycle (1.5 GHz; 1 ns of the trace's rounding) */
        CU_ASSERT(end[c] > 0 && end[c] <= cyc / 1500.0 + 1e-3);
        CU_ASSERT_DOUBLE_EQUAL(cyc, line_value(out, prefix, "cycles="), 0.5);
        CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(ks, "macs")->valuedouble, line_value(out, prefix, "macs="), 0.5);
        CU_ASSERT_EQUAL(cJSON_GetObjectItem(k, "collectives")->valueint, 2);
        CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(k, "collective_cycles")->valuedouble,
                               line_value(out, prefix, "collective_cycles="), 0.5);
        max = cyc > max ? cyc : max;
        macs += cJSON_GetObjectItem(ks, "macs")->valuedouble;
    }
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(tot, "cycles")->valuedouble, max, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(tot, "cycles")->valuedouble, line_value(out, "cycles=", "cycles="), 0.5);
    CU_ASSERT_DOUBLE_EQUAL(cJSON_GetObjectItem(tot, "macs")->valuedouble, macs, 0.5);
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(tot, "collectives")->valueint, 8);
    CU_ASSERT_EQUAL(cJSON_GetObjectItem(st, "tp")->valueint, 4);
    cJSON_Delete(t);
    cJSON_Delete(st);
    remove(trace);
    remove(stats);
}

/* decoder_small and transformer_small (a fused QKV weight cut by
 * split_with_sizes, baddbmm's attention mask) at TP 2 and 4.  The
 * decoder's outputs validate against the unsplit reference's bounds; the
 * transformer's end-to-end bound is infinite (vacuous, its one-card run
 * is validated stepwise, docs/validation.md), so its TP runs must be as
 * close to PyTorch as the one-card device is (within twice its measured
 * difference: the allreduce sums the cards' partial sums in another order). */
static void test_tp_decoder_and_transformer_small_at_2_and_4_cards(void)
{
    static char out[16384];
    char args[512];
    snprintf(args, sizeof args, "run %s/traces/transformer_small --check", SPYRE_SOURCE_DIR);
    CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, sizeof out), 0);
    double one = line_value(out, "expected getitem_57", "max_abs_err=");
    CU_ASSERT(one > 0);
    for (int n = 2; n <= 4; n += 2) {
        snprintf(args, sizeof args, "run %s/traces/decoder_small --tp %d --check", SPYRE_SOURCE_DIR, n);
        CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
        TU_ASSERT_CONTAINS(out, "allreduces=3", "within_tol=1.000000", "every card's outputs that are not cut equal");
        TU_ASSERT_LACKS(out, "MISMATCH", "vacuous");
        snprintf(args, sizeof args, "run %s/traces/transformer_small --tp %d --check", SPYRE_SOURCE_DIR, n);
        CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
        TU_ASSERT_CONTAINS(out, "allreduces=", "every card's outputs that are not cut equal");
        TU_ASSERT_LACKS(out, "MISMATCH");
        CU_ASSERT(line_value(out, "expected getitem_57", "max_abs_err=") <= 2 * one);
    }
}

/* llama_tiny (4 heads) at TP 3: no linear splits, every card computes the
 * whole layer; the run said only allreduces=0, generate and serve nothing
 * at all.  Now one note names it; at TP 2 there is none. */
static void test_tp_that_splits_nothing_says_so(void)
{
    static char out[16384];
    CU_ASSERT_EQUAL(tu_spyre("run " SPYRE_SOURCE_DIR "/traces/llama_tiny --tp 3", out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "spyre: note: --tp 3: no linear of " SPYRE_SOURCE_DIR "/traces/llama_tiny splits 3 ways: "
                            "every card computes the whole graph, with no allreduces", "allreduces=0");
    CU_ASSERT_EQUAL(tu_spyre("generate " SPYRE_SOURCE_DIR "/traces/llama_gen --prompt 1,2 --max-new-tokens 2 --tp 3", out,
                             sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "spyre: note: --tp 3: no linear of " SPYRE_SOURCE_DIR "/traces/llama_gen/prefill/graph.txt "
                            "splits 3 ways", "tokens=");
    CU_ASSERT_EQUAL(tu_spyre("run " SPYRE_SOURCE_DIR "/traces/llama_tiny --tp 2", out, sizeof out), 0);
    TU_ASSERT_LACKS(out, "note:");
    /* serve: for its layer graphs only (the ends, embedding and LM head, are whole at any TP) */
    char req[1024], args[4096];
    const char *one = "{\"arrival\": 0, \"prompt\": 64, \"output\": 1}\n";
    tu_write_tmpfile(".jsonl", one, strlen(one), req, sizeof req);
    for (int tp = 2; tp <= 3; tp++) {
        snprintf(args, sizeof args, "serve %s --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --tp %d --out %s.o "
                 "--cost-cache %s.c", req, tp, req, req);
        CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
        if (tp == 2)
            TU_ASSERT_LACKS(out, "note:");
        else
            TU_ASSERT_CONTAINS(out, "spyre: note: --tp 3: no linear of " SPYRE_SOURCE_DIR "/traces/serve_tiny/decode_b1_c64/"
                                    "graph.txt splits 3 ways");
        snprintf(args, sizeof args, "rm -f %s.o* %s.c", req, req);
        CU_ASSERT_EQUAL(system(args), 0);
    }
    remove(req);
}

/* `spyre run --tp 2 GRAPH` (the option first, as the single-card run
 * takes it) was "unexpected argument '--tp'"; --max-insns abc and
 * --seed x ran with no limit and seed 0. */
static void test_tp_options_may_precede_the_graph_and_bad_values_are_refused(void)
{
    static char out[16384];
    CU_ASSERT_EQUAL(tu_spyre("run --tp 2 " SPYRE_SOURCE_DIR "/traces/llama_tiny", out, sizeof out), 0);
    TU_ASSERT_CONTAINS(out, "tp=2 system=spyre-x8 chip=spyre allreduces=2 link=threads\n");
    CU_ASSERT_EQUAL(tu_spyre("run " SPYRE_SOURCE_DIR "/traces/llama_tiny --tp 2 --max-insns abc", out, sizeof out), 2);
    TU_ASSERT_CONTAINS(out, "spyre run: with --tp: unexpected argument '--max-insns' (");
    CU_ASSERT_EQUAL(tu_spyre("run " SPYRE_SOURCE_DIR "/traces/llama_tiny --tp 2 --seed x", out, sizeof out), 2);
    TU_ASSERT_CONTAINS(out, "spyre run: with --tp: unexpected argument '--seed' (");
    CU_ASSERT_EQUAL(tu_spyre("run " SPYRE_SOURCE_DIR "/traces/llama_tiny --tp 2 --seed 0x10", out, sizeof out), 0);
}

/* --max-insns N:CARD naming no card of the run limited none (N:2 at --tp
 * 2 ran to the end), a CARD past int was atoi's undefined behaviour, and
 * an N past 64 bits became no limit: each is refused. */
static void test_tp_instruction_limits_name_a_card_of_the_run(void)
{
    static char out[16384];
    static const char *const bad[] = {"50:99999999999", "99999999999999999999999", "50:-1"};
    char args[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "run %s/traces/llama_tiny --tp 2 --no-values --max-insns %s", SPYRE_SOURCE_DIR,
                 bad[i]);
        CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    }
    TU_ASSERT_CONTAINS(out, "spyre run: with --tp: unexpected argument '--max-insns' (");
    snprintf(args, sizeof args, "run %s/traces/llama_tiny --tp 2 --no-values --max-insns 50:2", SPYRE_SOURCE_DIR);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    CU_ASSERT_STRING_EQUAL(out, "spyre run: --max-insns N:2: the cards are 0 to 1\n");
    snprintf(args, sizeof args, "run %s/traces/llama_tiny --tp 2 --no-values --max-insns 50:1", SPYRE_SOURCE_DIR);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 3);
    TU_ASSERT_CONTAINS(out, "card 1: run: FAULT", "instruction limit (50");
}

/* generate, serve and a run without --tp under mpirun with 2 ranks (the
 * launcher's environment, as OpenMPI sets it): each rank ran the whole
 * command, printing everything twice and writing the same report files;
 * now rank 0 names the problem in one line, rank 1 says nothing, both
 * exit 2. */
static void test_one_process_commands_refuse_several_mpi_ranks(void)
{
    static const char *const cmds[][2] = {
        {"generate " SPYRE_SOURCE_DIR "/traces/llama_gen --prompt 1,2 --max-new-tokens 2 --tp 2",
         "spyre generate: under mpirun with 2 ranks: --tp N runs the cards in threads of one process; run it without "
         "mpirun\n"},
        {"serve x.jsonl --model " SPYRE_SOURCE_DIR "/traces/serve_tiny --tp 2",
         "spyre serve: under mpirun with 2 ranks: --tp N simulates the cards in one process; run it without mpirun\n"},
        {"run " SPYRE_SOURCE_DIR "/traces/mlp",
         "spyre run: under mpirun with 2 ranks: one rank per card needs --tp N (N the ranks)\n"},
    };
    char out[4096];
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        setenv("OMPI_COMM_WORLD_RANK", "0", 1);
        CU_ASSERT_EQUAL(tu_spyre(cmds[i][0], out, sizeof out), 2);
        CU_ASSERT_STRING_EQUAL(out, cmds[i][1]);
        setenv("OMPI_COMM_WORLD_RANK", "1", 1);
        CU_ASSERT_EQUAL(tu_spyre(cmds[i][0], out, sizeof out), 2);
        CU_ASSERT_STRING_EQUAL(out, "");
    }
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
}

#ifdef SPYRE_MPIEXEC
/* `mpirun -np n spyre ARGS` (at most 120 s), its output in out: the status. */
static int mpi_spyre(int n, const char *args, char *out, size_t len)
{
    char log[1024], cmd[4096];
    tu_tmpfile(".log", log, sizeof log);
    /* the CI machine runs the suite as root, which OpenMPI refuses unless told */
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    /* Under the sanitizer build LeakSanitizer reports what the MPI library
     * (and OpenBLAS in an MPI rank) keep at exit, in frames of theirs only;
     * our code's leaks are checked by the same paths run in one process. */
    snprintf(cmd, sizeof cmd,
             "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" timeout 120 %s --oversubscribe -x ASAN_OPTIONS -np %d "
             "%s/spyre %s > %s 2>&1", SPYRE_MPIEXEC, n, SPYRE_BINARY_DIR, args, log);
    int st = system(cmd);
    FILE *f = fopen(log, "r");
    size_t k = f ? fread(out, 1, len - 1, f) : 0;
    out[k] = 0;
    if (f)
        fclose(f);
    remove(log);
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* The lines of a run that must not depend on the link: every card's and
 * the overall statistics, and the bits of every card's outputs. */
static void link_free_lines(const char *out, char *keep, size_t len)
{
    keep[0] = 0;
    for (const char *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        size_t n = strchr(l, '\n') ? (size_t)(strchr(l, '\n') - l) + 1 : strlen(l);
        if (!strncmp(l, "card ", 5) || !strncmp(l, "cycles=", 7) || !strncmp(l, "check", 5))
            strncat(keep, l, n < len - strlen(keep) - 1 ? n : len - strlen(keep) - 1);
    }
}

/* One rank per card under mpirun: the same cycles and the same bits as
 * the threads of one process, for both layers at TP 2 and 4 and a whole
 * model's decode step at TP 4. */
static void test_mpi_ranks_give_the_threads_bits_and_cycles(void)
{
    static const char *const runs[][2] = {{"llama_tiny", "2"}, {"llama_tiny", "4"}, {"gpt2_small_block_tiny", "2"},
                                          {"gpt2_small_block_tiny", "4"}, {"llama_gen/decode", "4"}};
    static char a[16384], b[16384], ka[8192], kb[8192];
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, "run %s/traces/%s --tp %s --check", SPYRE_SOURCE_DIR, runs[i][0], runs[i][1]);
        CU_ASSERT_EQUAL(tu_spyre(args, a, sizeof a), 0);
        CU_ASSERT_EQUAL(mpi_spyre(atoi(runs[i][1]), args, b, sizeof b), 0);
        TU_ASSERT_CONTAINS(b, "link=mpi", "bits fnv1a=");
        TU_ASSERT_LACKS(b, "MISMATCH");
        link_free_lines(a, ka, sizeof ka);
        link_free_lines(b, kb, sizeof kb);
        TU_ASSERT_CONTAINS(ka, "card 1: cycles=", "bits fnv1a=");
        CU_ASSERT_STRING_EQUAL(ka, kb);
    }
}

/* --trace and --stats-json under mpirun: rank 0 writes the same JSON as
 * the threads of one process (every event and number). */
static void test_mpi_trace_and_stats_are_the_threads(void)
{
    char f[4][512], args[2][2048];
    static char out[16384];
    for (int i = 0; i < 4; i++)
        tu_tmpfile(".json", f[i], sizeof f[i]);
    for (int m = 0; m < 2; m++)
        snprintf(args[m], sizeof args[m], "run %s/traces/decoder_small --tp 2 --trace %s --trace-level kernel "
                 "--stats-json %s", SPYRE_SOURCE_DIR, f[2 * m], f[2 * m + 1]);
    CU_ASSERT_EQUAL_FATAL(tu_spyre(args[0], out, sizeof out), 0);
    CU_ASSERT_EQUAL_FATAL(mpi_spyre(2, args[1], out, sizeof out), 0);
    for (int k = 0; k < 2; k++) {
        cJSON *a = tu_read_json(f[k]), *b = tu_read_json(f[k + 2]);
        CU_ASSERT_PTR_NOT_NULL(a);
        CU_ASSERT(cJSON_Compare(a, b, 1));
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    for (int i = 0; i < 4; i++)
        remove(f[i]);
}

/* Card 2 stops at its instruction limit: every rank stops, the run fails
 * naming card 2's fault, and nothing hangs (120 s limit). */
static void test_mpi_failing_rank_stops_every_rank(void)
{
    char args[512], out[16384];
    snprintf(args, sizeof args, "run %s/traces/llama_tiny --tp 4 --max-insns 50:2", SPYRE_SOURCE_DIR);
    int st = mpi_spyre(4, args, out, sizeof out);
    CU_ASSERT(st != 0 && st != 124 && st != -1);
    TU_ASSERT_CONTAINS(out, "card 2: run: FAULT", "instruction limit (50");
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 3); /* the same with threads */
    TU_ASSERT_CONTAINS(out, "card 2: run: FAULT", "instruction limit (50");
}
#endif

int main(void)
{
    static const tu_test tests[] = {
        {"system_files_name_cards_chip_and_link", test_system_files_name_cards_chip_and_link},
        {"system_file_errors_name_the_line", test_system_file_errors_name_the_line},
        {"docs_hold_the_system_keys_table", test_docs_hold_the_system_keys_table},
        {"ring_cost_formulas", test_ring_cost_formulas},
        {"allreduce_cost_matches_formula_and_values_sum", test_allreduce_cost_matches_formula_and_values_sum},
        {"allgather_and_reduce_scatter_values_and_cost", test_allgather_and_reduce_scatter_values_and_cost},
        {"failing_card_stops_every_card", test_failing_card_stops_every_card},
        {"tp_layers_validate_at_2_and_4_cards", test_tp_layers_validate_at_2_and_4_cards},
        {"tp_unknown_op_is_named", test_tp_unknown_op_is_named},
        {"tp_host_op_reading_an_all_reduce_result_validates", test_tp_host_op_reading_an_all_reduce_result_validates},
        {"tp_compile_writes_megatron_shards", test_tp_compile_writes_megatron_shards},
        {"tp_whole_models_with_caches_validate", test_tp_whole_models_with_caches_validate},
        {"tp_cut_inputs_and_outputs_validate", test_tp_cut_inputs_and_outputs_validate},
        {"tp_mask_rows_masked_whole_are_nan_as_pytorch", test_tp_mask_rows_masked_whole_are_nan_as_pytorch},
        {"tp_mask_rows_with_plus_inf_or_nan_are_nan_as_pytorch", test_tp_mask_rows_with_plus_inf_or_nan_are_nan_as_pytorch},
        {"tp_trace_has_a_process_per_card_and_stats_totals", test_tp_trace_has_a_process_per_card_and_stats_totals},
        {"tp_decoder_and_transformer_small_at_2_and_4_cards", test_tp_decoder_and_transformer_small_at_2_and_4_cards},
        {"tp_that_splits_nothing_says_so", test_tp_that_splits_nothing_says_so},
        {"tp_options_may_precede_the_graph_and_bad_values_are_refused",
         test_tp_options_may_precede_the_graph_and_bad_values_are_refused},
        {"tp_instruction_limits_name_a_card_of_the_run", test_tp_instruction_limits_name_a_card_of_the_run},
        {"one_process_commands_refuse_several_mpi_ranks", test_one_process_commands_refuse_several_mpi_ranks},
#ifdef SPYRE_MPIEXEC
        {"mpi_ranks_give_the_threads_bits_and_cycles", test_mpi_ranks_give_the_threads_bits_and_cycles},
        {"mpi_failing_rank_stops_every_rank", test_mpi_failing_rank_stops_every_rank},
        {"mpi_trace_and_stats_are_the_threads", test_mpi_trace_and_stats_are_the_threads},
#endif
        {NULL, NULL},
    };
    return tu_run("multicard", tests);
}
