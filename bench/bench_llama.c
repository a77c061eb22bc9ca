/* bench_llama: one Llama-3-8B-size decoder layer (hidden 4096, 32 query
 * heads, 8 KV heads of 128, FFN 14336; traces/models/llama.py) compiled for
 * the reference chip (chip/configs/spyre.cfg) and simulated TIMING ONLY
 * (sim_options values 0, races off), for
 *   prefill: llama_8b_layer, x (1, 512, 4096), causal attention over 512;
 *   decode:  llama_8b_decode, one new token (batch 1) at position 512
 *            attending to a KV cache of 512 positions and to itself.
 * Each is set against its roofline bound on this configuration:
 *   bound = max(MACs / peak MAC rate, bytes / DRAM bandwidth)
 *   peak MAC rate  = cores x corelets x pt_rows x pt_cols x pt_lanes x clock
 *   DRAM bandwidth = dram_channels x dram_burst_bytes / (dram_burst_tck x dram_tck_ns)
 * MACs are the matrix products of the layer as the graph writes them (full
 * QK^T and PV, the causal mask is added, not skipped); bytes are what must
 * move at least once: every weight, the KV cache (decode: read; prefill:
 * K and V written), the input and output hidden states, in the device's
 * 2-byte DL16 elements.  Decode also gives tokens per second for 32 such
 * layers (Llama 3 8B's depth; embedding and LM head not counted).
 *
 * No weight values are needed for a timing-only run: the graphs are
 * exported on first use with tools/export.py --graph-only (graph.txt only,
 * traced on meta tensors; needs /usr/bin/python3 with torch, tools/setup)
 * into BUILD/traces/llama_8b_layer and BUILD/traces/llama_8b_decode (BUILD
 * is the build directory holding this program; never the source tree),
 * compiled with cc_compile and loaded with rt_load_program without writing
 * any tensor (inputs and weights stay unwritten device memory; timing does
 * not depend on values).
 *
 * Both phases are attempted; the bounds are printed for both, the simulated
 * figures only for a phase that compiled and ran.  Exit status: 0 ok, 2 a
 * graph cannot be exported, loaded or compiled (the compiler's message is
 * printed on stderr), 3 the program faulted.  Headline last:
 * decode_vs_roofline (simulated time / bound; absent when decode failed). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc.h"
#include "benchutil.h"
#include "rt.h"

/* The layer's shape: traces/models/llama.py, _layer / _decode for 8B. */
enum {
    HIDDEN = 4096,
    HEADS = 32,
    KV_HEADS = 8,
    HEAD_DIM = HIDDEN / HEADS,
    FFN = 14336,
    SEQ = 512,     /* prefill sequence and decode context */
    LAYERS = 32,   /* Llama 3 8B */
    ELEM_BYTES = 2 /* DL16 on the device */
};

static int die(int status, const char *what, const char *msg)
{
    fprintf(stderr, "bench_llama: %s: %s\n", what, msg);
    return status;
}

/* Parameters of the layer's linears and norms (the rope tables, a few
 * hundred KB, are left out: a decode step needs one row of them). */
static double layer_params(void)
{
    double kv = (double)KV_HEADS * HEAD_DIM;
    return 2.0 * HIDDEN * HIDDEN + 2.0 * HIDDEN * kv + 3.0 * HIDDEN * FFN + 2.0 * HIDDEN;
}

/* Matrix-product MACs of the layer for `tokens` new tokens attending to
 * `keys` positions each. */
static double layer_macs(double tokens, double keys)
{
    return tokens * (layer_params() - 2.0 * HIDDEN) + 2.0 * HEADS * tokens * keys * HEAD_DIM;
}

typedef struct {
    const char *name;      /* FUNC in traces/models/llama.py, and the trace directory */
    double macs, bytes;    /* the work, for the bound */
    double sim_us;         /* results */
    double compile_s, sim_host_s;
    sim_stats st;
    uint64_t weight_bytes; /* the compiled program's weights region */
} phase;

/* Export (if needed), compile, load and run one graph timing-only. */
static int run_phase(rt_device *dev, const char *src, const char *build, phase *ph)
{
    char dir[PATH_MAX + 64], graph[PATH_MAX + 96], model[128], err[4096], what[128];
    snprintf(dir, sizeof dir, "%s/traces/%s", build, ph->name);
    snprintf(graph, sizeof graph, "%s/graph.txt", dir);
    snprintf(model, sizeof model, "llama.py:%s", ph->name);
    if (bench_export("bench_llama", src, model, dir, "--graph-only"))
        return 2;
    gr_graph *g = gr_graph_load(graph, err, sizeof err);
    if (!g)
        return die(2, "load", err);
    snprintf(what, sizeof what, "the compiler cannot compile %s", ph->name);
    isa_program *p = bench_compile(g, rt_config(dev), &ph->compile_s, err, sizeof err);
    if (!p) {
        gr_graph_free(g);
        return die(2, what, err);
    }
    ph->weight_bytes = p->weight_bytes;
    /* no tensor is written: timing only needs no values */
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    if (!prog) {
        gr_graph_free(g);
        return die(2, "load program", err);
    }
    bench_sim_options(dev, 0, 0);
    rt_run_result *res = malloc(sizeof *res);
    if (!res)
        return die(2, "host", "out of memory");
    double t0 = bench_now();
    if (rt_launch(prog, res)) {
        rt_run_format(res, err, sizeof err);
        return die(3, ph->name, err);
    }
    ph->sim_host_s = bench_now() - t0;
    ph->st = res->stats;
    ph->sim_us = sim_stats_time_us(&res->stats, rt_config(dev));
    free(res);
    rt_unload(prog);
    gr_graph_free(g);
    return 0;
}

int main(void)
{
    char src[PATH_MAX], build[PATH_MAX], err[2048];
    if (bench_dirs(src, sizeof src, build, sizeof build))
        return die(2, "/proc/self/exe", "cannot find the build directory");

    char *cfgpath = chip_config_path("spyre"); /* lives as long as the benchmark */
    rt_device *dev = rt_open(cfgpath, err, sizeof err);
    if (!dev)
        return die(2, cfgpath, err);
    const chip_config *cfg = rt_config(dev);
    double mac_rate = bench_peak_macs_per_s(cfg), dram_bw = bench_dram_bytes_per_s(cfg);

    double weights = layer_params() * ELEM_BYTES;
    double kv_cache = 2.0 * KV_HEADS * SEQ * HEAD_DIM * ELEM_BYTES;
    double kv_token = 2.0 * KV_HEADS * HEAD_DIM * ELEM_BYTES;
    phase ph[2];
    memset(ph, 0, sizeof ph);
    ph[0].name = "llama_8b_layer"; /* prefill: x in, out, K and V of 512 tokens out */
    ph[0].macs = layer_macs(SEQ, SEQ);
    ph[0].bytes = weights + kv_cache + 2.0 * SEQ * HIDDEN * ELEM_BYTES;
    ph[1].name = "llama_8b_decode"; /* decode: cache read, the token's K and V out */
    ph[1].macs = layer_macs(1, SEQ + 1);
    ph[1].bytes = weights + kv_cache + kv_token + 2.0 * HIDDEN * ELEM_BYTES;

    int status = 0, ok[2];
    for (int i = 0; i < 2; i++) {
        int s = run_phase(dev, src, build, &ph[i]);
        ok[i] = s == 0;
        if (s > status)
            status = s;
    }

    printf("config=%s\n", cfgpath);
    printf("peak_tmacs_per_s=%.3f\n", mac_rate * 1e-12);
    printf("dram_gb_per_s=%.2f\n", dram_bw * 1e-9);
    /* the bounds always; a phase's simulated figures only when it ran */
    const char *key[2] = {"prefill", "decode"};
    double ratio[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        const phase *p = &ph[i];
        double compute_us = p->macs / mac_rate * 1e6, memory_us = p->bytes / dram_bw * 1e6;
        double bound_us = compute_us > memory_us ? compute_us : memory_us;
        printf("%s_graph=%s/traces/%s/graph.txt\n", key[i], build, p->name);
        printf("%s_macs=%.0f\n", key[i], p->macs);
        printf("%s_min_bytes=%.0f\n", key[i], p->bytes);
        printf("%s_compute_bound_us=%.3f\n", key[i], compute_us);
        printf("%s_memory_bound_us=%.3f\n", key[i], memory_us);
        printf("%s_roofline_us=%.3f\n", key[i], bound_us);
        printf("%s_bound_by=%s\n", key[i], compute_us > memory_us ? "compute" : "memory");
        printf("%s_status=%s\n", key[i], ok[i] ? "ok" : "failed (message above on stderr)");
        if (!ok[i])
            continue;
        ratio[i] = p->sim_us / bound_us;
        printf("%s_compile_seconds=%.3f\n", key[i], p->compile_s);
        printf("%s_sim_host_seconds=%.3f\n", key[i], p->sim_host_s);
        printf("%s_kernels=%d\n", key[i], p->st.nkernels);
        printf("%s_program_weight_bytes=%llu\n", key[i], (unsigned long long)p->weight_bytes);
        printf("%s_sim_cycles=%.0f\n", key[i], p->st.cycles);
        printf("%s_sim_macs=%llu\n", key[i], (unsigned long long)p->st.macs);
        printf("%s_sim_dram_bytes=%llu\n", key[i],
               (unsigned long long)(p->st.dram_bytes_read + p->st.dram_bytes_written));
        printf("%s_mac_utilization=%.4f\n", key[i], sim_stats_mac_utilization(&p->st, cfg));
        printf("%s_sim_time_us=%.3f\n", key[i], p->sim_us);
    }
    printf("decode_roofline_tokens_per_second_32_layers=%.2f\n",
           1.0 / (LAYERS * 1e-6 * (ph[1].bytes / dram_bw * 1e6 > ph[1].macs / mac_rate * 1e6
                                       ? ph[1].bytes / dram_bw * 1e6
                                       : ph[1].macs / mac_rate * 1e6)));
    if (ok[0])
        printf("prefill_tokens_per_second_32_layers=%.1f\n", SEQ / (LAYERS * ph[0].sim_us * 1e-6));
    if (ok[1])
        printf("decode_tokens_per_second_32_layers=%.2f\n", 1.0 / (LAYERS * ph[1].sim_us * 1e-6));
    if (ok[0])
        printf("prefill_vs_roofline=%.3f\n", ratio[0]);
    if (ok[1])
        printf("decode_vs_roofline=%.3f\n", ratio[1]);
    rt_close(dev);
    return status;
}
