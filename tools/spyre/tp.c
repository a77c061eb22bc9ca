/* tp.c: `spyre run GRAPH --tp N` (docs/multicard.md): the graph split for N
 * cards (cc_tp_split), each card's shards of the weights written beside
 * its graph in a scratch directory, every card compiled, loaded on a
 * device of its own and run in a thread of its own, meeting the others at
 * the allreduces; statistics per card and overall; --check compares
 * card 0's outputs with the unsplit graph's reference and PyTorch's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cc.h"
#include "chip.h"
#include "isa.h"
#include "rt.h"
#include "tp.h"

enum { TP_OK = 0, TP_MISMATCH = 1, TP_USAGE = 2, TP_FAULT = 3 };

#ifdef SPYRE_MPI
#define LINK_OPS(s) ((s)->mpi ? &tp_mpi_link_ops : &rt_threads_link_ops)
#else
#define LINK_OPS(s) (&rt_threads_link_ops)
#endif

typedef struct {
    const char *path, *system, *config, *out;
    const char *trace, *stats_json; /* one file each for every card (rank 0 writes them) */
    sim_trace_level level;          /* --trace-level: insn (the default) or kernel */
    int ncards, check;
    int limit_card; /* --max-insns N:CARD: the limit of that card only (-1: every card's) */
    uint64_t seed;
    sim_options opt;
} tp_args;

/* One card's results, as every process can send them to rank 0. */
typedef struct {
    int ok;
    int coll_ops;
    double cycles, coll_cycles, wait_cycles;
    uint64_t macs;
    char msg[512]; /* the fault, when not ok */
} tp_card;

typedef struct {
    tp_args a;
    chip_system sys;
    int here0, here1; /* the cards this process simulates: all, or under mpirun its rank's */
    int mpi, rank;    /* one card per MPI rank (tp_mpi.c), this process's */
    tp_card cards[64];
    float **outs;     /* per output tensor of the cards' program: every card's values, card after card (rank 0) */
    size_t nouts;
    gr_graph *g;
    cc_tp_plan *plan;
    char dir[1024];
    int scratch; /* dir is ours to remove (else --out's) */
    int no_weights; /* compile -o of a graph without its weights file: no shards written */
    gr_graph *cg;
    rt_device *dev[64];
    rt_program *prog[64];
    rt_run_result *res;
    sim_stats *stats; /* every card's (rank 0) */
    void *link;
    char err[1024];
} tp_state;

/* The first of the launchers' variables set (OpenMPI's, then PMI's), or -1. */
static long env_count(const char *const *names)
{
    for (; *names; names++)
        if (getenv(*names))
            return atol(getenv(*names));
    return -1;
}

int tp_refuse_mpirun(const char *cmd, const char *why)
{
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", NULL};
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL};
    long ranks = env_count(size_vars);
    if (ranks < 2)
        return 0;
    if (env_count(rank_vars) <= 0)
        fprintf(stderr, "spyre %s: under mpirun with %ld ranks: %s\n", cmd, ranks, why);
    return 2;
}

void tp_note_whole(const char *graph, int ncards, const cc_tp_plan *p)
{
    static int said;
    if (said || !p || ncards < 2 || cc_tp_rows(p))
        return;
    said = 1;
    fprintf(stderr, "spyre: note: --tp %d: no linear of %s splits %d ways: every card computes the whole graph, with "
                    "no allreduces (docs/multicard.md)\n", ncards, graph, ncards);
}

int tp_wanted(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* options may come before GRAPH */
        if (!strcmp(argv[i], "--tp"))
            return 1;
    return 0;
}

/* --max-insns's value: N or N:CARD, whole decimal numbers, N within 64
 * bits and CARD below 64 (the most cards); *card -1 without one. */
static int insns_parse(const char *v, uint64_t *n, int *card)
{
    char *end;
    errno = 0;
    *n = strtoull(v, &end, 10);
    int ok = *v >= '0' && *v <= '9' && !errno;
    *card = -1;
    if (ok && *end == ':' && end[1] >= '0' && end[1] <= '9') {
        const long k = strtol(end + 1, &end, 10);
        ok = k < 64;
        *card = (int)k;
    }
    return ok && !*end;
}

static int tp_parse(int argc, char **argv, tp_args *a)
{
    *a = (tp_args){.system = "spyre-x8", .seed = 1, .limit_card = -1, .level = SIM_TRACE_INSN};
    a->opt = (sim_options){.values = 1};
    int64_t seed;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (o[0] != '-' && !a->path)
            a->path = o;
        else if (!strcmp(o, "--check"))
            a->check = 1;
        else if (!strcmp(o, "--no-values"))
            a->opt.values = 0;
        else if (v && !strcmp(o, "--tp") && ++i) {
            char *end;
            long n = strtol(v, &end, 10);
            a->ncards = *end || n < 1 || n > 64 ? -1 : (int)n;
        }
        else if (v && !strcmp(o, "--system") && ++i)
            a->system = v;
        else if (v && !strcmp(o, "--config") && ++i)
            a->config = v;
        else if (v && !strcmp(o, "--max-insns") && insns_parse(v, &a->opt.max_insns, &a->limit_card))
            i++;
        else if (v && !strcmp(o, "-o") && ++i)
            a->out = v;
        else if (v && !strcmp(o, "--seed") && !isa_parse_int(v, &seed) && seed >= 0 && ++i)
            a->seed = (uint64_t)seed;
        else if (v && !strcmp(o, "--trace") && ++i)
            a->trace = v;
        else if (v && !strcmp(o, "--stats-json") && ++i)
            a->stats_json = v;
        else if (v && !strcmp(o, "--trace-level") && ++i && (!strcmp(v, "insn") || !strcmp(v, "kernel")))
            a->level = !strcmp(v, "insn") ? SIM_TRACE_INSN : SIM_TRACE_KERNEL;
        else {
            fprintf(stderr, "spyre run: with --tp: unexpected argument '%s' (--tp N, --system NAME, --config NAME, "
                            "--check, --no-values, --seed N, --max-insns N[:CARD], --trace FILE, "
                            "--trace-level insn|kernel, --stats-json FILE)\n", o);
            return -1;
        }
    }
    if (a->trace)
        a->opt.trace = a->level;
    if (!a->path || a->ncards < 1 || a->ncards > 64) {
        fprintf(stderr, "spyre run: --tp takes a number of cards in [1, 64] and a graph\n");
        return -1;
    }
    if (a->limit_card >= a->ncards) { /* no card would have the limit */
        fprintf(stderr, "spyre run: --max-insns N:%d: the cards are 0 to %d\n", a->limit_card, a->ncards - 1);
        return -1;
    }
    return 0;
}

/* The system (and the chip of its cards, --config overriding it). */
static int tp_system(tp_state *s)
{
    char *path = chip_system_path(s->a.system);
    int rc = chip_system_load(path, &s->sys, s->err, sizeof s->err);
    free(path);
    if (!rc && s->a.ncards > s->sys.cards)
        rc = snprintf(s->err, sizeof s->err, "--tp %d: the system %s has %d cards", s->a.ncards, s->sys.name,
                      s->sys.cards) < 0 ? -1 : -1;
    if (!rc && s->a.config) {
        char *cpath = chip_config_path(s->a.config);
        rc = chip_config_load(cpath, &s->sys.chip, s->err, sizeof s->err);
        free(cpath);
    }
    return rc;
}

/* Card c's weights file: every parameter, its shard where it is cut. */
static int write_weights(tp_state *s, const rt_st_file *full, int c, const char *path)
{
    const gr_graph *g = s->g;
    rt_st_entry *e = calloc((size_t)g->nparams + 1, sizeof *e);
    char (*keys)[1024] = calloc((size_t)g->nparams + 1, sizeof *keys);
    float **bufs = calloc((size_t)g->nparams + 1, sizeof *bufs);
    int rc = 0, n = 0;
    for (int i = 0; i < g->nparams && !rc; i++) {
        const gr_value *v = &g->values[g->params[i]];
        const rt_st_tensor *t = rt_st_find(full, v->param_key ? v->param_key : v->name);
        if (!t || t->numel != gr_ttype_numel(&v->type)) {
            rc = snprintf(s->err, sizeof s->err, "%s: no weight %s of %%%s's shape", full->path, v->param_key,
                          v->name) < 0 ? -1 : -1;
            break;
        }
        cc_tp_param_key(s->plan, g->params[i], keys[n], sizeof keys[n]);
        if (!strcmp(keys[n], t->name)) { /* whole on every card: as it is, in its own dtype */
            e[n] = (rt_st_entry){.name = keys[n], .dtype = t->dtype, .rank = t->rank, .data = t->data};
            memcpy(e[n].shape, t->shape, sizeof e[n].shape);
            n++;
            continue;
        }
        float *whole = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *whole);
        bufs[n] = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *bufs[n]);
        rt_st_to_f32(t, whole);
        int64_t k = cc_tp_shard(s->plan, g->params[i], c, whole, bufs[n]);
        free(whole);
        const gr_ttype *lt = &s->cg->values[s->cg->params[i]].type; /* the card's shape */
        e[n] = (rt_st_entry){.name = keys[n], .dtype = RT_ST_F32, .rank = lt->rank, .data = bufs[n]};
        for (int d = 0; d < lt->rank; d++)
            e[n].shape[d] = lt->shape[d];
        if (k != gr_ttype_numel(lt))
            abort(); /* the shard and the card's graph disagree: a bug of tp.c */
        n++;
    }
    if (!rc)
        rc = rt_st_write(path, e, n, s->err, sizeof s->err);
    for (int i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
    free(keys);
    free(e);
    return rc;
}

static char *dir_file(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    if (!p)
        abort();
    sprintf(p, "%s/%s", dir, name);
    return p;
}

/* The cards' graph and weights into the scratch directory. */
static int write_cards(tp_state *s)
{
    if (s->a.out) {
        snprintf(s->dir, sizeof s->dir, "%s", s->a.out);
        if (mkdir(s->dir, 0777) && access(s->dir, W_OK))
            return snprintf(s->err, sizeof s->err, "%.900s: cannot make the directory", s->dir) < 0 ? -1 : -1;
    } else {
        snprintf(s->dir, sizeof s->dir, "/tmp/spyre-tp-XXXXXX");
        if (!mkdtemp(s->dir))
            return snprintf(s->err, sizeof s->err, "cannot make a scratch directory in /tmp") < 0 ? -1 : -1;
        s->scratch = 1;
    }
    int rc = 0;
    char *text = cc_tp_graph_text(s->plan, NULL), *gp = dir_file(s->dir, "graph.txt");
    FILE *f = fopen(gp, "w");
    if (!rc && (!f || fputs(text, f) < 0))
        rc = snprintf(s->err, sizeof s->err, "%s: cannot write", gp) < 0 ? -1 : -1;
    if (f)
        fclose(f);
    if (!rc && !(s->cg = gr_graph_load(gp, s->err, sizeof s->err)))
        rc = -1;
    free(gp);
    free(text);
    if (rc)
        return rc;
    if (!s->a.opt.values && !s->a.out)
        return 0; /* timing only: no data (a --graph-only export has none) */
    char *wpath = s->g->weights ? gr_graph_relpath(s->g, s->g->weights) : NULL;
    if (wpath && s->a.out && access(wpath, R_OK)) { /* a --graph-only export: the program without shards */
        free(wpath);
        s->no_weights = 1;
        return 0;
    }
    rt_st_file *full = wpath ? rt_st_read(wpath, s->err, sizeof s->err) : NULL;
    free(wpath);
    if (s->g->weights && !full)
        return -1;
    if (!full && s->g->nparams) { /* as a one-card run says it */
        const gr_value *v = &s->g->values[s->g->params[0]];
        return snprintf(s->err, sizeof s->err, "graph without weights file: missing weight %s for %%%s",
                        v->param_key ? v->param_key : v->name, v->name) < 0 ? -1 : -1;
    }
    for (int c = s->here0; c < s->here1 && full && !rc; c++) {
        char name[64];
        snprintf(name, sizeof name, "weights%d.safetensors", c);
        char *p = dir_file(s->dir, name);
        rc = write_weights(s, full, c, p);
        free(p);
    }
    rt_st_free(full);
    return rc;
}

/* The cards' graph compiled once, for every card (scratch dir/card.elf). */
static int compile_cards(tp_state *s)
{
    cc_compile_opts o = {.target = &s->sys.chip};
    cc_result *r = cc_compile(s->cg, &o, s->err, sizeof s->err);
    isa_program *p = r ? cc_result_take_program(r) : NULL;
    cc_result_free(r);
    char *elf = dir_file(s->dir, "card.elf");
    int rc = !p || isa_elf_write(p, elf, s->err, sizeof s->err);
    isa_program_free(p);
    free(elf);
    return rc ? -1 : 0;
}

/* Does the split cut a graph input (a KV cache given as an input)? */
static int cut_inputs(const tp_state *s)
{
    for (int i = 0; i < s->g->ninputs; i++)
        if (cc_tp_is_cut(s->plan, s->g->inputs[i]))
            return 1;
    return 0;
}

/* Card c's inputs: from the export's inputs (path), else the seeded random
 * values the unsplit graph's run would have (rt_random_uniform by name),
 * each cut one as the card's part of it. */
static int shard_inputs(tp_state *s, int c, const char *path)
{
    rt_st_file *f = path ? rt_st_read(path, s->err, sizeof s->err) : NULL;
    if (path && !f)
        return -1;
    int rc = 0;
    for (int i = 0; i < s->g->ninputs && !rc; i++) {
        const gr_value *v = &s->g->values[s->g->inputs[i]];
        int64_t n = gr_ttype_numel(&v->type);
        float *whole = malloc((size_t)(n ? n : 1) * sizeof *whole), *part = malloc((size_t)(n ? n : 1) * sizeof *part);
        const rt_st_tensor *t = f ? rt_st_find(f, v->name) : NULL;
        if (f && (!t || t->numel != n))
            rc = snprintf(s->err, sizeof s->err, "%s: no input %s of %%%s's shape", path, v->name, v->name) < 0 ? -1 : -1;
        else if (t)
            rt_st_to_f32(t, whole);
        else
            rt_random_uniform(s->a.seed, v->name, whole, (size_t)n);
        if (!rc) {
            cc_tp_shard(s->plan, s->g->inputs[i], c, whole, part);
            rc = rt_set_input(s->prog[c], v->name, part, s->err, sizeof s->err);
        }
        free(whole);
        free(part);
    }
    rt_st_free(f);
    return rc;
}

/* Card c's program on its device s->dev[c], with its data (fill: the
 * inputs first seeded random values, as spyre run's). */
static int load_card(tp_state *s, int c, int fill)
{
    char *elf = dir_file(s->dir, "card.elf");
    s->prog[c] = rt_load(s->dev[c], elf, s->err, sizeof s->err);
    free(elf);
    if (!s->prog[c] || (fill && rt_fill_inputs(s->prog[c], s->a.seed, s->err, sizeof s->err)))
        return -1;
    if (!s->a.opt.values)
        return 0;
    char name[64];
    snprintf(name, sizeof name, "weights%d.safetensors", c);
    char *wp = dir_file(s->dir, name), *inputs = s->g->path ? gr_graph_relpath(s->g, "inputs.safetensors") : NULL;
    free(s->cg->weights);
    s->cg->weights = s->g->weights ? strdup(name) : NULL;
    if (inputs && access(inputs, R_OK)) {
        free(inputs);
        inputs = NULL;
    }
    int rc = rt_load_graph_tensors(s->prog[c], s->cg, cut_inputs(s) ? NULL : inputs, s->err, sizeof s->err);
    if (!rc && cut_inputs(s))
        rc = shard_inputs(s, c, inputs);
    free(wp);
    free(inputs);
    return rc;
}

/* Card c: a device of the system's chip, linked, with its program and data. */
static int open_card(tp_state *s, int c)
{
    if (!(s->dev[c] = rt_open_config(&s->sys.chip, s->err, sizeof s->err)))
        return -1;
    sim_options opt = s->a.opt;
    if (s->a.limit_card >= 0 && s->a.limit_card != c)
        opt.max_insns = 0; /* the default */
    rt_set_options(s->dev[c], &opt);
    rt_set_link(s->dev[c], LINK_OPS(s), s->link, c);
    return load_card(s, c, 1);
}

/* Per card and overall: cycles, the collectives' share. */
static void tp_report(const tp_state *s)
{
    const chip_config *k = &s->sys.chip;
    double last = 0, coll = 0;
    for (int c = 0; c < s->a.ncards; c++) {
        const tp_card *r = &s->cards[c];
        printf("card %d: cycles=%.0f collectives=%d collective_cycles=%.0f wait_cycles=%.0f compute_cycles=%.0f "
               "macs=%" PRIu64 "\n", c, r->cycles, r->coll_ops, r->coll_cycles, r->wait_cycles,
               r->cycles - r->coll_cycles, r->macs);
        if (r->cycles > last) {
            last = r->cycles;
            coll = r->coll_cycles;
        }
    }
    printf("tp=%d system=%s chip=%s allreduces=%d link=%s\n", s->a.ncards, s->sys.name, k->name,
           cc_tp_rows(s->plan), s->mpi ? "mpi" : "threads");
    printf("cycles=%.0f time_us=%.3f (at %.3g GHz) collective_cycles=%.0f collective_share=%.4f\n", last,
           last / k->clock_ghz / 1e3, k->clock_ghz, coll, last > 0 ? coll / last : 0);
}

/* Output k of the cards' program (its tensor index via *t) and its element count. */
static int64_t output_k(const tp_state *s, size_t k, const isa_tensor **t)
{
    const isa_program *p = rt_program_isa(s->prog[s->here0]);
    *t = NULL;
    for (size_t i = 0; i < p->ntensors; i++)
        if (p->tensors[i].role == ISA_ROLE_OUTPUT && k-- == 0) {
            *t = &p->tensors[i];
            return rt_tensor_elems(*t);
        }
    return -1;
}

/* Every card's outputs into s->outs on rank 0 (each card's host copies
 * after its launch; under MPI gathered from the ranks). */
static void collect_outputs(tp_state *s)
{
    const isa_tensor *t = NULL;
    while (output_k(s, s->nouts, &t) >= 0)
        s->nouts++;
    s->outs = calloc(s->nouts + 1, sizeof *s->outs);
    for (size_t k = 0; k < s->nouts; k++) {
        int64_t n = output_k(s, k, &t);
        s->outs[k] = calloc((size_t)(n * s->a.ncards + 1), sizeof **s->outs);
        for (int c = s->here0; c < s->here1; c++) {
            const float *y = rt_host_tensor(s->prog[c], t->name, NULL);
            if (y)
                memcpy(s->outs[k] + (size_t)c * (size_t)n, y, (size_t)n * sizeof *y);
        }
#ifdef SPYRE_MPI
        if (s->mpi) {
            float *all = calloc((size_t)(n * s->a.ncards + 1), sizeof *all);
            tp_mpi_gather(s->outs[k] + (size_t)s->rank * (size_t)n, (size_t)n * sizeof *all, all);
            free(s->outs[k]);
            s->outs[k] = all;
        }
#endif
    }
}

/* Every card's outputs that are not cut the same bits as card 0's. */
static int same_on_every_card(const tp_state *s)
{
    int status = TP_OK;
    for (size_t k = 0; k < s->nouts; k++) {
        const isa_tensor *t = NULL;
        int64_t n = output_k(s, k, &t);
        int v = gr_graph_find(s->g, t->name);
        for (int c = 1; c < s->a.ncards && v >= 0 && !cc_tp_is_cut(s->plan, v); c++)
            if (memcmp(s->outs[k] + (size_t)c * (size_t)n, s->outs[k], (size_t)n * sizeof **s->outs)) {
                printf("check cards: %%%s of card %d differs from card 0's MISMATCH\n", t->name, c);
                status = TP_MISMATCH;
            }
    }
    /* the bits of every card's outputs, to compare runs (threads, MPI) */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t k = 0; k < s->nouts; k++) {
        const isa_tensor *t = NULL;
        const unsigned char *b = (const unsigned char *)s->outs[k];
        for (size_t i = 0; i < (size_t)output_k(s, k, &t) * (size_t)s->a.ncards * sizeof **s->outs; i++)
            h = (h ^ b[i]) * 0x100000001b3ull;
    }
    if (status == TP_OK)
        printf("check cards: every card's outputs that are not cut equal to card 0's (bits fnv1a=%016" PRIx64 ")\n",
               h);
    return status;
}

/* The unsplit graph compiled and loaded beside card 0's program with the
 * export's data, its outputs the cards' outputs put together (the parts
 * of a cut one, such as a state's new slices, where they belong): what
 * the unsplit graph's checks compare. */
static rt_program *assemble(tp_state *s)
{
    cc_compile_opts o = {.target = &s->sys.chip};
    cc_result *r = cc_compile(s->g, &o, s->err, sizeof s->err);
    rt_program *prog = r ? rt_load_program(s->dev[0], cc_result_take_program(r), s->err, sizeof s->err) : NULL;
    cc_result_free(r);
    char *inputs = s->g->path ? gr_graph_relpath(s->g, "inputs.safetensors") : NULL;
    int rc = !prog || rt_fill_inputs(prog, s->a.seed, s->err, sizeof s->err) ||
             rt_load_graph_tensors(prog, s->g, inputs && access(inputs, R_OK) == 0 ? inputs : NULL, s->err,
                                   sizeof s->err);
    free(inputs);
    for (size_t i = 0; prog && !rc && i < rt_program_isa(prog)->ntensors; i++) {
        const isa_tensor *t = &rt_program_isa(prog)->tensors[i];
        int v = gr_graph_find(s->g, t->name);
        if (t->role != ISA_ROLE_OUTPUT || v < 0)
            continue;
        float *whole = calloc((size_t)rt_tensor_elems(t) + 1, sizeof *whole);
        for (size_t k = 0; k < s->nouts; k++) {
            const isa_tensor *ct = NULL;
            int64_t n = output_k(s, k, &ct);
            for (int c = 0; !strcmp(ct->name, t->name) && c < (cc_tp_is_cut(s->plan, v) ? s->a.ncards : 1); c++)
                cc_tp_unshard(s->plan, v, c, s->outs[k] + (size_t)c * (size_t)n, whole);
        }
        rc = rt_write_tensor(prog, t->name, whole, ISA_HT_F32, s->err, sizeof s->err);
        free(whole);
    }
    if (rc && prog) {
        rt_unload(prog);
        prog = NULL;
    }
    return prog;
}

static int print_results(rt_check_result *r, int n, const char *prefix)
{
    for (int i = 0; i < n; i++) {
        char line[1024];
        rt_check_format(&r[i], line, sizeof line);
        printf("%s%s\n", prefix, *prefix ? line + 6 : line);
    }
    free(r);
    return 0;
}

/* The cards' outputs put together against the unsplit graph's reference
 * and PyTorch's outputs, and against each other. */
static int tp_check(tp_state *s)
{
    rt_program *whole = assemble(s);
    if (!whole)
        return fprintf(stderr, "spyre run: the unsplit graph for the check: %s\n", s->err), TP_USAGE;
    rt_check_result *r = NULL;
    int n = 0, bad = rt_check_graph(whole, s->g, &r, &n, s->err, sizeof s->err);
    int status = bad < 0 ? TP_USAGE : bad ? TP_MISMATCH : TP_OK;
    if (bad >= 0)
        print_results(r, n, "");
    char *exp = s->g->path ? gr_graph_relpath(s->g, "expected.safetensors") : NULL;
    char *inputs = s->g->path ? gr_graph_relpath(s->g, "inputs.safetensors") : NULL;
    int random_inputs = !inputs || access(inputs, R_OK) != 0;
    free(inputs);
    if (bad >= 0 && exp && access(exp, R_OK) == 0 && random_inputs) {
        printf("expected: skipped: no inputs.safetensors: the inputs are random\n");
    } else if (bad >= 0 && exp && access(exp, R_OK) == 0) {
        bad = rt_check_expected(whole, s->g, exp, &r, &n, s->err, sizeof s->err);
        if (bad >= 0)
            print_results(r, n, "expected ");
        status = bad < 0 ? TP_USAGE : bad && status == TP_OK ? TP_MISMATCH : status;
    }
    free(exp);
    if (status == TP_USAGE)
        fprintf(stderr, "spyre run: %s\n", s->err);
    rt_unload(whole);
    int same = same_on_every_card(s);
    return status == TP_OK ? same : status;
}

static void tp_free(tp_state *s)
{
    for (int c = 0; c < 64; c++) {
        if (s->prog[c])
            rt_unload(s->prog[c]);
        if (s->dev[c])
            rt_close(s->dev[c]);
    }
#ifdef SPYRE_MPI
    if (s->mpi)
        tp_mpi_link_free(s->link);
    else
#endif
        rt_threads_link_free(s->link);
    free(s->res);
    free(s->stats);
    for (size_t k = 0; k < s->nouts; k++)
        free(s->outs[k]);
    free(s->outs);
    gr_graph_free(s->cg);
    cc_tp_free(s->plan);
    gr_graph_free(s->g);
    if (s->scratch) { /* the scratch directory holds only what write_cards wrote */
        char *p = dir_file(s->dir, "graph.txt");
        unlink(p);
        free(p);
        p = dir_file(s->dir, "card.elf");
        unlink(p);
        free(p);
        for (int c = 0; c < s->a.ncards; c++) {
            char name[64];
            snprintf(name, sizeof name, "weights%d.safetensors", c);
            p = dir_file(s->dir, name);
            unlink(p);
            free(p);
        }
        rmdir(s->dir);
    }
}

/* This process's cards' results into s->cards, every card's on rank 0. */
static void collect_cards(tp_state *s)
{
    for (int c = s->here0; c < s->here1; c++) {
        const rt_run_result *r = &s->res[c];
        tp_card *k = &s->cards[c];
        *k = (tp_card){r->status == RT_RUN_OK, r->coll_ops, r->stats.cycles, r->coll_cycles, r->coll_wait_cycles,
                       r->stats.macs, ""};
        if (!k->ok)
            rt_run_format(r, k->msg, sizeof k->msg);
    }
#ifdef SPYRE_MPI
    if (s->mpi) {
        tp_card mine = s->cards[s->rank];
        tp_mpi_gather(&mine, sizeof mine, s->cards);
    }
#endif
}

/* Card c's timeline as trace events (sim_write_trace_card), malloc'd text. */
static char *card_events(tp_state *s, int c, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        abort();
    sim_write_trace_card(rt_sim(s->dev[c]), rt_program_isa(s->prog[c]), f, c, c == 0);
    fclose(f);
    return text;
}

/* --trace: every card's events, card after card, into one file on rank 0. */
static int write_trace(tp_state *s)
{
    char **texts = calloc((size_t)s->a.ncards, sizeof *texts);
    size_t *lens = calloc((size_t)s->a.ncards, sizeof *lens);
    if (!texts || !lens)
        abort();
    for (int c = s->here0; c < s->here1; c++)
        texts[c] = card_events(s, c, &lens[c]);
#ifdef SPYRE_MPI
    if (s->mpi)
        tp_mpi_gather_text(texts, lens, s->rank, s->a.ncards);
#endif
    int rc = 0;
    if (s->rank == 0) {
        isa_outfile o;
        rc = isa_out_open(&o, s->a.trace, s->err, sizeof s->err);
        if (!rc) {
            fprintf(o.f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
            for (int c = 0; c < s->a.ncards; c++)
                fwrite(texts[c], 1, lens[c], o.f);
            fprintf(o.f, "\n]}\n");
            rc = isa_out_close(&o, 1, s->err, sizeof s->err);
        }
    }
    for (int c = 0; c < s->a.ncards; c++)
        free(texts[c]);
    free(texts);
    free(lens);
    return rc;
}

/* --stats-json: each card's statistics (the one-card keys, docs/timing.md)
 * with its collectives, and the totals of the run. */
static void print_stats(const tp_state *s, FILE *f)
{
    const chip_config *k = &s->sys.chip;
    sim_stats t = {0};
    double coll = 0;
    int ops = 0;
    fprintf(f, "{\n\"tp\": %d,\n\"system\": \"%s\",\n\"allreduces\": %d,\n\"cards\": [\n", s->a.ncards, s->sys.name,
            cc_tp_rows(s->plan));
    for (int c = 0; c < s->a.ncards; c++) {
        const tp_card *r = &s->cards[c];
        const sim_stats *st = &s->stats[c];
        fprintf(f, "{\"card\": %d, \"collectives\": %d, \"collective_cycles\": %.0f, \"wait_cycles\": %.0f, "
                   "\"stats\": ", c, r->coll_ops, r->coll_cycles, r->wait_cycles);
        sim_print_stats_json(f, st, k);
        fprintf(f, "}%s\n", c + 1 < s->a.ncards ? "," : "");
        if (st->cycles > t.cycles) { /* the run ends with its slowest card */
            t.cycles = st->cycles;
            coll = r->coll_cycles;
        }
        t.macs += st->macs;
        t.insns += st->insns;
        t.sfp_elems += st->sfp_elems;
        t.dram_bytes_read += st->dram_bytes_read;
        t.dram_bytes_written += st->dram_bytes_written;
        ops += r->coll_ops;
    }
    fprintf(f, "],\n\"totals\": {\"cycles\": %.0f, \"time_us\": %.4f, \"macs\": %" PRIu64 ", \"insns\": %" PRIu64
               ", \"sfp_elems\": %" PRIu64 ", \"dram_bytes_read\": %" PRIu64 ", \"dram_bytes_written\": %" PRIu64
               ", \"collectives\": %d, \"collective_cycles\": %.0f, \"collective_share\": %.6f}\n}\n",
            t.cycles, sim_stats_time_us(&t, k), t.macs, t.insns, t.sfp_elems, t.dram_bytes_read, t.dram_bytes_written,
            ops, coll, t.cycles > 0 ? coll / t.cycles : 0);
}

static int write_stats(tp_state *s)
{
    s->stats = calloc((size_t)s->a.ncards, sizeof *s->stats);
    if (!s->stats)
        abort();
    for (int c = s->here0; c < s->here1; c++)
        s->stats[c] = s->res[c].stats;
#ifdef SPYRE_MPI
    if (s->mpi) {
        sim_stats *mine = malloc(sizeof *mine);
        if (!mine)
            abort();
        *mine = s->stats[s->rank];
        tp_mpi_gather(mine, sizeof *mine, s->stats);
        free(mine);
    }
#endif
    if (s->rank != 0)
        return 0;
    isa_outfile o;
    if (isa_out_open(&o, s->a.stats_json, s->err, sizeof s->err))
        return -1;
    print_stats(s, o.f);
    return isa_out_close(&o, 1, s->err, sizeof s->err);
}

/* --trace and --stats-json, every rank taking part; on rank 0 a file
 * that cannot be written is said and is exit 2. */
static int tp_write_outputs(tp_state *s)
{
    int rc = 0;
    if (s->a.trace && write_trace(s))
        rc = fprintf(stderr, "spyre run: %s\n", s->err) < 0 ? -1 : -1;
    if (s->a.stats_json && write_stats(s))
        rc = fprintf(stderr, "spyre run: %s\n", s->err) < 0 ? -1 : -1;
    return rc;
}

/* The split, the cards' files and program, this process's cards opened. */
static int tp_setup(tp_state *s)
{
    if (tp_system(s) || !(s->g = gr_graph_load(s->a.path, s->err, sizeof s->err)) ||
        !(s->plan = cc_tp_split(s->g, s->a.ncards, s->err, sizeof s->err)) || write_cards(s) || compile_cards(s))
        return -1;
#ifdef SPYRE_MPI
    if (s->mpi)
        s->link = tp_mpi_link_new(&s->sys, s->rank, s->a.ncards);
    else
#endif
        s->link = rt_threads_link_new(&s->sys, s->a.ncards);
    s->res = calloc((size_t)s->a.ncards, sizeof *s->res);
    for (int c = s->here0; c < s->here1; c++)
        if (open_card(s, c))
            return -1;
    return 0;
}

/* Did every process set up?  (Under MPI a rank that could not must not
 * leave the others waiting at the first collective.) */
static int all_set_up(tp_state *s, int bad)
{
#ifdef SPYRE_MPI
    if (s->mpi)
        return !tp_mpi_any(bad);
#endif
    (void)s;
    return !bad;
}

static int tp_go(tp_state *s)
{
    int bad = tp_setup(s);
    if (bad && s->rank == 0)
        fprintf(stderr, "spyre run: %s\n", s->err);
    if (!bad && s->rank == 0)
        tp_note_whole(s->a.path, s->a.ncards, s->plan);
    if (!all_set_up(s, bad))
        return TP_USAGE;
    rt_launch_cards(&s->prog[s->here0], s->here1 - s->here0, &s->res[s->here0]);
    collect_cards(s);
    int out_bad = tp_write_outputs(s);
    if (s->a.check && s->a.opt.values)
        collect_outputs(s);
    if (s->rank != 0)
        return TP_OK;
    /* the card that failed first: its fault is no other card's */
    int root = -1;
    for (int c = s->a.ncards - 1; c >= 0; c--)
        if (!s->cards[c].ok && (root < 0 || !strstr(s->cards[c].msg, " failed: ")))
            root = c;
    if (root >= 0) {
        fprintf(stderr, "spyre run: %s: card %d: %s\n", s->a.path, root, s->cards[root].msg);
        return TP_FAULT;
    }
    if (out_bad)
        return TP_USAGE;
    tp_report(s);
    return s->a.check && s->a.opt.values ? tp_check(s) : TP_OK;
}

/* Bytes of one card's parameters: the cards' graph's (DL16), without state. */
static double card_param_bytes(const gr_graph *cg)
{
    double b = 0;
    for (int i = 0; i < cg->nparams; i++)
        if (!cg->values[cg->params[i]].state)
            b += 2.0 * gr_ttype_numel(&cg->values[cg->params[i]].type);
    return b;
}

int tp_timing(const char *graph, int ncards, const char *system, const char *config, double *cycles,
              double *param_bytes, char *err, size_t errlen)
{
    tp_state *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, errlen, "out of host memory"), -1;
    s->a = (tp_args){.path = graph, .system = system, .config = config, .ncards = ncards, .seed = 1,
                     .limit_card = -1};
    s->here1 = ncards;
    int rc = tp_setup(s);
    if (!rc) {
        rt_launch_cards(s->prog, ncards, s->res);
        collect_cards(s);
        *cycles = 0;
        for (int c = 0; c < ncards && !rc; c++)
            if (!s->cards[c].ok)
                rc = snprintf(s->err, sizeof s->err, "%s: card %d: %s", graph, c, s->cards[c].msg) < 0 ? -1 : -1;
            else if (s->cards[c].cycles > *cycles)
                *cycles = s->cards[c].cycles;
        *param_bytes = card_param_bytes(s->cg);
    }
    if (rc)
        snprintf(err, errlen, "%s", s->err);
    tp_free(s);
    free(s);
    return rc;
}

int tp_devices_open(const char *system, const char *config, int ncards, const sim_options *opt, rt_device **devs,
                    chip_system *sys, char *err, size_t errlen)
{
    tp_state *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, errlen, "out of host memory"), -1;
    s->a = (tp_args){.system = system, .config = config, .ncards = ncards};
    int rc = tp_system(s);
    for (int c = 0; c < ncards && !rc; c++)
        if (!(devs[c] = rt_open_config(&s->sys.chip, s->err, sizeof s->err)))
            rc = -1;
        else
            rt_set_options(devs[c], opt);
    if (rc)
        snprintf(err, errlen, "%s", s->err);
    *sys = s->sys;
    free(s);
    return rc;
}

int tp_load_split(gr_graph *g, int ncards, rt_device *const *devs, int values, rt_program **progs, cc_tp_plan **plan,
                  char *err, size_t errlen)
{
    tp_state *s = calloc(1, sizeof *s);
    if (!s)
        return snprintf(err, errlen, "out of host memory"), -1;
    s->a = (tp_args){.path = g->path, .ncards = ncards, .seed = 1, .limit_card = -1, .opt = {.values = values}};
    s->here1 = ncards;
    s->sys.chip = *rt_config(devs[0]);
    s->g = g;
    int rc = !(s->plan = cc_tp_split(g, ncards, s->err, sizeof s->err)) || write_cards(s) || compile_cards(s);
    if (!rc)
        tp_note_whole(g->path, ncards, s->plan);
    for (int c = 0; c < ncards && !rc; c++) {
        s->dev[c] = devs[c];
        rc = load_card(s, c, 0); /* the caller sets the inputs: random ones were uploaded (and counted) too */
        progs[c] = s->prog[c];
    }
    if (rc) {
        snprintf(err, errlen, "%s", s->err);
        for (int c = 0; c < ncards; c++)
            progs[c] = NULL; /* tp_free unloads them */
    } else {
        memset(s->prog, 0, sizeof s->prog); /* the caller's now */
    }
    memset(s->dev, 0, sizeof s->dev); /* the caller's */
    s->g = NULL;                        /* the caller's */
    if (!rc && plan) {
        *plan = s->plan;
        s->plan = NULL;
    }
    tp_free(s);
    free(s);
    return rc ? -1 : 0;
}

int tp_run(int argc, char **argv)
{
    tp_state *s = calloc(1, sizeof *s);
    if (!s || tp_parse(argc, argv, &s->a)) {
        free(s);
        return TP_USAGE;
    }
    s->here1 = s->a.ncards;
#ifdef SPYRE_MPI
    int size = 0;
    if (tp_mpi_launched() && !tp_mpi_begin(&s->rank, &size)) {
        s->mpi = 1;
        s->here0 = s->rank;
        s->here1 = s->rank + 1;
        if (size != s->a.ncards) {
            if (s->rank == 0)
                fprintf(stderr, "spyre run: --tp %d under mpirun with %d ranks: one rank per card\n", s->a.ncards,
                        size);
            tp_mpi_end();
            free(s);
            return TP_USAGE;
        }
    }
#endif
    int status = tp_go(s);
    tp_free(s);
#ifdef SPYRE_MPI
    if (s->mpi) {
        status = tp_mpi_agree(status);
        tp_mpi_end();
    }
#endif
    free(s);
    return status;
}

/* `spyre compile GRAPH --tp N -o DIR`: the cards' graph, each card's
 * weights and the cards' program into DIR; the graph on stdout. */
int tp_compile(int argc, char **argv)
{
    tp_state *s = calloc(1, sizeof *s);
    if (!s || tp_parse(argc, argv, &s->a)) {
        free(s);
        return TP_USAGE;
    }
    int status = TP_OK;
    s->here1 = s->a.ncards;
    if (!s->a.out) {
        fprintf(stderr, "spyre compile: --tp N takes -o DIR (the cards' graph, weights and program)\n");
        status = TP_USAGE;
    } else if (s->a.trace || s->a.stats_json) {
        fprintf(stderr, "spyre compile: --trace and --stats-json are spyre run's (nothing runs here)\n");
        status = TP_USAGE;
    } else if (tp_system(s) || !(s->g = gr_graph_load(s->a.path, s->err, sizeof s->err)) ||
               !(s->plan = cc_tp_split(s->g, s->a.ncards, s->err, sizeof s->err)) || write_cards(s) ||
               compile_cards(s)) {
        fprintf(stderr, "spyre compile: %s\n", s->err);
        status = TP_USAGE;
    } else {
        char *text = cc_tp_graph_text(s->plan, NULL);
        fputs(text, stdout);
        free(text);
        printf("# tp=%d allreduces=%d: %s/graph.txt, %s/card.elf", s->a.ncards, cc_tp_rows(s->plan), s->dir, s->dir);
        if (s->no_weights)
            printf(" (no weights file: no shards written)\n");
        else
            printf(", %s/weights0..%d.safetensors\n", s->dir, s->a.ncards - 1);
    }
    tp_free(s);
    free(s);
    return status;
}
