/* bench_bert: one BERT-base encoder layer (hidden 768, 12 heads, FFN 3072,
 * sequence 128; traces/models/encoder.py:bert_handwritten) compiled for the
 * reference chip (chip/configs/spyre.cfg), run with values and validated
 * against the reference executor.  Reports the simulated time and, measured
 * in the same run on the same graph and inputs, the host time of the
 * simulation against the host time of the reference executor (rt_ref).
 *
 * The graph is exported on first use into BUILD/traces/bert_base (BUILD is
 * the build directory holding this program; never the source tree) with
 * /usr/bin/python3 tools/export.py, which needs PyTorch (tools/setup).
 * The simulated time is also set against the layer's roofline bound on
 * this configuration, defined as bench_llama defines it:
 *   bound = max(MACs / peak MAC rate, bytes / DRAM bandwidth)
 * MACs are the layer's matrix products as the model writes them (the
 * four d x d projections and the two FFN linears per token, QK^T and PV
 * over every head); bytes what must move at least once: every parameter,
 * the input, the mask and the output, in 2-byte DL16 elements.
 *
 * Exit status: 0 ok, 1 an output does not match, 2 the graph cannot be
 * exported, loaded or compiled, 3 the program faulted.  Headline last:
 * sim_vs_reference_time. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc.h"
#include "benchutil.h"
#include "rt.h"

enum { REPS = 3 };

/* The layer's shape: traces/models/encoder.py, bert_handwritten. */
enum { D_MODEL = 768, HEADS = 12, D_FF = 3072, SEQ = 128, ELEM_BYTES = 2 };

/* Parameters: q, k, v and output projections with biases, the two FFN
 * linears with biases, two LayerNorms (weight and bias). */
static double bert_params(void)
{
    return 4.0 * D_MODEL * (D_MODEL + 1) + 2.0 * D_MODEL * D_FF + D_FF + D_MODEL + 4.0 * D_MODEL;
}

static double bert_macs(void)
{
    return SEQ * (4.0 * D_MODEL * D_MODEL + 2.0 * D_MODEL * D_FF) + 2.0 * SEQ * SEQ * D_MODEL;
}

/* parameters, x in and out, the mask */
static double bert_bytes(void) { return (bert_params() + 2.0 * SEQ * D_MODEL + SEQ) * ELEM_BYTES; }

static int die(int status, const char *what, const char *msg)
{
    fprintf(stderr, "bench_bert: %s: %s\n", what, msg);
    return status;
}

int main(void)
{
    char src[PATH_MAX], build[PATH_MAX], dir[PATH_MAX + 32], graph[PATH_MAX + 64], inputs[PATH_MAX + 64];
    char err[2048];
    if (bench_dirs(src, sizeof src, build, sizeof build))
        return die(2, "/proc/self/exe", "cannot find the build directory");
    snprintf(dir, sizeof dir, "%s/traces/bert_base", build);
    snprintf(graph, sizeof graph, "%s/graph.txt", dir);
    snprintf(inputs, sizeof inputs, "%s/inputs.safetensors", dir);
    if (bench_export("bench_bert", src, "encoder.py:bert_handwritten", dir, ""))
        return 2;

    char *cfgpath = chip_config_path("spyre"); /* lives as long as the benchmark */
    rt_device *dev = rt_open(cfgpath, err, sizeof err);
    if (!dev)
        return die(2, cfgpath, err);
    gr_graph *g = gr_graph_load(graph, err, sizeof err);
    if (!g)
        return die(2, "load", err);

    /* compile for the chip (front and back half) */
    double compile_s = 0, t0;
    isa_program *p = bench_compile(g, rt_config(dev), &compile_s, err, sizeof err);
    if (!p)
        return die(2, "the compiler cannot compile BERT-base", err);
    rt_program *prog = rt_load_program(dev, p, err, sizeof err);
    if (!prog)
        return die(2, "load program", err);
    if (rt_fill_inputs(prog, 1, err, sizeof err) || rt_load_graph_tensors(prog, g, inputs, err, sizeof err))
        return die(2, "inputs", err);

    /* the simulation, with values and race detection (spyre run's default):
     * best of REPS launches (the first also uploads the weights) */
    bench_sim_options(dev, 1, 1);
    rt_run_result *res = malloc(sizeof *res);
    if (!res)
        return die(2, "host", "out of memory");
    double sim_s = 1e30, first_s = 0;
    for (int r = 0; r < REPS; r++) {
        t0 = bench_now();
        if (rt_launch(prog, res)) {
            rt_run_format(res, err, sizeof err);
            return die(3, "run", err);
        }
        double t = bench_now() - t0;
        if (r == 0)
            first_s = t;
        if (t < sim_s)
            sim_s = t;
    }

    /* validation: every output against the reference executor */
    rt_check_result *chk = NULL;
    int nchk = 0;
    int bad = rt_check_graph(prog, g, &chk, &nchk, err, sizeof err);
    if (bad < 0)
        return die(2, "check", err);
    for (int i = 0; i < nchk; i++) {
        char line[1024];
        rt_check_format(&chk[i], line, sizeof line);
        printf("%s\n", line);
    }
    free(chk);

    /* the reference executor on the same graph, weights and inputs: best
     * of REPS runs (loading the files is not timed) */
    rt_ref *ref = rt_ref_new(g, err, sizeof err);
    if (!ref || rt_ref_load_weights(ref, NULL, err, sizeof err) || rt_ref_load_inputs(ref, inputs, err, sizeof err))
        return die(2, "reference", err);
    double ref_s = 1e30;
    for (int r = 0; r < REPS; r++) {
        t0 = bench_now();
        if (rt_ref_run(ref, err, sizeof err))
            return die(2, "reference", err);
        double t = bench_now() - t0;
        if (t < ref_s)
            ref_s = t;
    }
    rt_ref_free(ref);

    const chip_config *cfg = rt_config(dev);
    const sim_stats *st = &res->stats;
    printf("graph=%s\n", graph);
    printf("kernels=%d\n", st->nkernels);
    printf("compile_seconds=%.3f\n", compile_s);
    printf("sim_cycles=%.0f\n", st->cycles);
    printf("sim_time_us=%.3f\n", sim_stats_time_us(st, cfg));
    printf("mac_utilization=%.4f\n", sim_stats_mac_utilization(st, cfg));
    printf("macs=%llu\n", (unsigned long long)st->macs);
    printf("dram_bytes=%llu\n", (unsigned long long)(st->dram_bytes_read + st->dram_bytes_written));
    printf("outputs_ok=%s\n", bad ? "no" : "yes");
    printf("sim_first_launch_host_seconds=%.4f\n", first_s);
    printf("sim_host_seconds=%.4f\n", sim_s);
    printf("reference_host_seconds=%.4f\n", ref_s);
    double compute_us = bert_macs() / bench_peak_macs_per_s(cfg) * 1e6;
    double memory_us = bert_bytes() / bench_dram_bytes_per_s(cfg) * 1e6;
    double bound_us = compute_us > memory_us ? compute_us : memory_us;
    printf("compute_bound_us=%.3f\n", compute_us);
    printf("memory_bound_us=%.3f\n", memory_us);
    printf("roofline_us=%.3f\n", bound_us);
    printf("bert_vs_roofline=%.3f\n", sim_stats_time_us(st, cfg) / bound_us);
    printf("sim_vs_reference_time=%.3f\n", ref_s > 0 ? sim_s / ref_s : 0.0);
    free(res);
    gr_graph_free(g);
    rt_unload(prog);
    rt_close(dev);
    return bad ? 1 : 0;
}
