/* fuzz_compile: graph text through the whole compiler (compiler/),
 * front and back half, for the 4-core chip (chip/configs/spyre-4core.cfg).
 * Graphs are capped so that one input compiles in well under a second:
 * every declared tensor at most FZ_MAX_NUMEL elements and at most
 * FZ_MAX_NODES ops (the traces in traces/ fit); larger graphs are parsed
 * only. */
#include "cc.h"
#include "fuzzutil.h"

#include <stdio.h>
#include <stdlib.h>

#define FZ_MAX_NUMEL (1 << 16)
#define FZ_MAX_NODES 256

static chip_config cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_config("spyre-4core", &cfg);
    return 0;
}

static int small_type(const gr_ttype *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->shape[d] < 0 || t->shape[d] > FZ_MAX_NUMEL)
            return 0;
        n *= t->shape[d] ? t->shape[d] : 1;
        if (n > FZ_MAX_NUMEL)
            return 0;
    }
    return 1;
}

static int small_graph(const gr_graph *g)
{
    if (g->nnodes > FZ_MAX_NODES)
        return 0;
    for (int i = 0; i < g->nvalues; i++) {
        const gr_value *v = &g->values[i];
        if (!small_type(&v->type))
            return 0;
        for (int j = 0; j < v->ntuple; j++)
            if (!small_type(&v->tuple[j]))
                return 0;
    }
    return 1;
}

static void *parse_graph(const char *text, const char *name, char *err, size_t errlen)
{
    return gr_graph_parse(text, name, err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gr_graph *g = fz_parse(data, size, parse_graph, "fuzz.txt");
    if (!g)
        return 0;
    if (small_graph(g)) {
        char err[512];
        cc_compile_opts opts = {0};
        opts.target = &cfg;
        cc_result *r = cc_compile(g, &opts, err, sizeof err);
        if (r) {
            isa_program_free(cc_result_take_program(r));
            cc_result_free(r);
        }
    }
    gr_graph_free(g);
    return 0;
}
