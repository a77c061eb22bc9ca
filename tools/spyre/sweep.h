/* sweep.h: `spyre sweep` as main.c's command table sees it, the tuning
 * files that `spyre compile/run --tuning FILE` read, and what the sweep's
 * files share: sweep.c (the command: options, candidates, the run),
 * sweep_pool.c (the worker pool), sweep_variant.c (one variant compiled
 * and simulated; autotune), sweep_rows.c (rows, the CSV journal),
 * sweep_report.c (the report writer: JSON, SVG), sweep_vary.c and
 * sweep_vary_report.c (--vary), sweep_tuning.c (tuning files). */
#ifndef SPYRE_SWEEP_H
#define SPYRE_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cc.h"
#include "chip.h"
#include "rt.h"
#include "sim.h"

extern const char sweep_usage[];
extern const char sweep_help[];
int cmd_sweep(int argc, char **argv);

/* The kernels an --autotune file can tune (one line each), and so the
 * work divisions --tuning must take, beside up to SW_WORK_DIV_OPTS
 * --work-div options. */
enum { SW_TUNE_MAX = 256, SW_WORK_DIV_OPTS = 64, SW_WORK_DIV_MAX = SW_TUNE_MAX + SW_WORK_DIV_OPTS };

/* Append to work_div[*n..max) a "KERNEL=SPEC" (malloc'd) for every line
 * `tune GRAPH CONFIG KERNEL SPEC` of the tuning file at path whose GRAPH is
 * the name of graph_path (its directory's last component), CONFIG is
 * cfg->name and KERNEL is a kernel of g compiled for cfg; other lines are
 * ignored.  -1 with err on an unreadable or malformed file. */
int sweep_tuning_load(const char *path, const char *graph_path, const gr_graph *g, const chip_config *cfg,
                      const char **work_div, int *n, int max, char *err, size_t errlen);

/* ---- between the sweep's files ---- */

enum { SW_OK = 0, SW_USAGE = 2 };

/* --refresh-phases: the default and the most (docs/sweep.md, "Refresh phases"). */
enum { SW_PHASES_DEFAULT = 7, SW_PHASES_MAX = 64 };
/* The refresh phases a sweep takes without --refresh-phases, from the
 * graph's default compile base (its program taken), or -1. */
int sw_auto_phases(cc_result *base, const chip_config *cfg, char *err, size_t errlen);

/* One variant: a kernel with one forced split, and what the run measured. */
typedef struct {
    int index;            /* position in the enumeration (shards take index % N == I) */
    char kernel[64];
    char choice[64];      /* a work_div SPEC: "GMxGN", "CORES", with tiling or +nokeep */
    double cycles;        /* whole graph */
    double kernel_cycles; /* the kernel's span: end - start */
    uint64_t dram_bytes;  /* the kernel's DMA bytes */
    double mac_util;      /* the kernel's MACs / (span x the chip's peak MACs per cycle) */
    uint64_t lx_peak;     /* highest LX byte touched + 1, busiest core, whole run */
    int is_default, is_best;
    int phases;           /* refresh phases the cycles are the mean over (docs/sweep.md) */
    int done;             /* measured (now or in an earlier run) */
} sw_row;

typedef struct {
    sw_row *v;
    int n, cap;
} sw_rows;

/* A worker's line to the parent: it sends results and questions, the
 * parent sends answers. */
typedef struct {
    int to_parent, from_parent;
} sw_chan;

/* In a forked worker: measure item into buf (size bytes), asking the
 * parent with sw_ask when it must.  0 sends buf back; 1 ends the item
 * with nothing to send; -1 is a failure (the worker has said why on
 * stderr). */
typedef int (*sw_work_fn)(void *ctx, int item, void *buf, sw_chan *ch);
/* In the parent: the answer (0..255) to item's question, or -1 when it
 * cannot be given yet (asked again after the next event). */
typedef int (*sw_ask_fn)(void *ctx, int item);
/* In the parent: item's buf arrived. */
typedef void (*sw_done_fn)(void *ctx, int item, const void *buf);
/* In the parent: item's worker is gone (ok: it exited with status 0). */
typedef void (*sw_end_fn)(void *ctx, int item, int ok);

typedef struct {
    sw_work_fn work;
    sw_ask_fn ask;   /* NULL when the work never asks */
    sw_done_fn done;
    sw_end_fn end;   /* may be NULL */
} sw_job;

/* One candidate: a kernel and a split to force on it, and what is known.
 * Each is compiled once, in a worker, which then simulates it with the
 * program it compiled if the compiler accepted it and this run needs it.
 * The accepted ones (variants) are numbered in candidate order as soon as
 * every earlier candidate is known, so the numbering is the same however
 * the workers interleave; a result that arrives before its number waits
 * here. */
enum { CAND_PENDING, CAND_LEGAL, CAND_ILLEGAL, CAND_LOST };
typedef struct {
    char kernel[64];
    char choice[64];
    int is_default;
    int done_before; /* measured by an earlier run (a row of the CSV resumed from) */
    int state;       /* CAND_* */
    int row;         /* its row in rs once numbered, else -1 */
    int run;         /* 1 to simulate it in this run: legal, not done before, in this shard */
    int have;        /* res holds its measurement, not yet numbered */
    sw_row res;
} sw_cand;

typedef struct {
    const gr_graph *g;
    const chip_config *cfg;
    sw_cand *cands;
    int ncand;
    int numbered;        /* candidates [0, numbered) are known and numbered */
    int lost;            /* a worker died before saying whether its candidate compiles */
    sw_rows *rs;         /* the variants, in index order */
    const sw_rows *prev; /* rows of an earlier run (resume) */
    int shard_i, shard_n;
    int ndone, inshard, nran;
    FILE *csv;
    int phases;          /* refresh phases each variant is simulated at */
} sw_variants;

enum { VARY_MAX_KEYS = 8, VARY_MAX_VALUES = 64, VARY_MAX_CONFIGS = 4096 };

/* One configuration: the base --config with some keys set, and what the
 * run measured (whole graph). */
typedef struct {
    int index;          /* position in the cross product (shards take index % N == I) */
    char config[256];   /* "KEY=V;KEY=V", keys in --vary order */
    int failed;         /* the graph does not compile on it; message says why */
    char message[512];
    double cycles;
    uint64_t dram_bytes; /* read + written, whole run */
    double mac_util;     /* sim_stats_mac_utilization */
    uint64_t lx_peak;    /* highest LX byte touched + 1, busiest core */
    int is_best;
    int done;
} sw_vrow;

typedef struct {
    sw_vrow *v;
    int n, cap;
} sw_vrows;

/* The values of one --vary KEY=V1,V2,... */
typedef struct {
    char key[64];
    char *vals[VARY_MAX_VALUES];
    int n;
} sw_axis;

/* Where each variant's kernel stands among the rows: its default and best. */
typedef struct {
    char name[64];
    int def, best; /* row indices into rs, -1 when none */
    int n;
} sw_kernel;

/* sweep.c */
int sw_usage(const char *what);

/* sweep_pool.c */
int sw_ask(sw_chan *ch);
int sw_run_pool(void *ctx, const int *todo, int ntodo, int jobs, size_t size, const sw_job *job, const char *what);

/* sweep_report.c */
int sw_kernels_of(const sw_rows *rs, sw_kernel *ks, int max);
void sw_svg_text(FILE *f, double x, double y, const char *anchor, int size, const char *s);
void sw_svg_open(FILE *f, double W, double H, const char *title);
void sw_json_str(FILE *f, const char *s);
FILE *sw_out_open(isa_outfile *o, const char *dir, const char *name);
int sw_out_close(isa_outfile *o);
FILE *sw_csv_then_json(isa_outfile *o, const char *dir, const char *hdr, void (*row)(FILE *f, const void *rows, int i),
                       const void *rows, int n, const char *graph, const char *config);
int sw_finish(sw_rows *rs, const char *out, const char *graph, const char *config);

/* sweep_rows.c */
void *sw_grow_rows(void *v, int n, int *cap, size_t elem);
sw_row *sw_rows_push(sw_rows *rs);
sw_row *sw_rows_find(const sw_rows *rs, const char *kernel, const char *choice);
double sw_now_s(void);
int sw_make_dirs(const char *path);
void sw_graph_name(const char *path, char *out, size_t len);
char *sw_read_if_present(const char *path, char *err, size_t errlen);
/* The graph and config names of a sweep.json into graph and config (256
 * bytes each) if empty, else -1 with err when it names others (as: whose). */
int sw_json_names(const char *path, char *graph, char *config, const char *as, char *err, size_t errlen);
/* 0 when --out dir out holds no sweep of another graph or chip, else -1 with err. */
int sw_out_ours(const char *out, const char *gname, const char *cname, char *err, size_t errlen);
int sw_is_header(const char *line, const char *hdr);
int sw_csv_each(const char *path, int (*is_header)(const char *line), int (*row)(const char *line, void *ctx),
                void *ctx, const char *what, char *err, size_t errlen);
extern const char sw_csv_header[];
void sw_csv_write_row(FILE *f, const sw_row *r);
int sw_csv_read(const char *path, sw_rows *rs, char *err, size_t errlen);
int sw_cmp_index(const void *a, const void *b);
int sw_rows_phases(const sw_rows *rs);

/* sweep_variant.c */
int sw_default_choice(const cc_result *r, const char *kernel, char *out, size_t len, char *tiles, size_t tlen);
int sw_tile_variants(int matmul, const char *def, const char *tiles, int64_t kmax, char (*out)[64], int max);
cc_result *sw_compile_variant(const gr_graph *g, const chip_config *cfg, const char *kernel, const char *choice,
                              char *err, size_t errlen);
int sw_simulate(const gr_graph *g, const chip_config *cfg, const char *kernel, const char *choice,
                rt_run_result *res, int *no_compile, char *err, size_t errlen);
int sw_autotune_joint(const gr_graph *g, const chip_config *cfg, int phases, const sw_rows *rs, const char *graph,
                      const char *file);
void sw_number_candidates(sw_variants *c);
int sw_variant_work(void *ctx, int item, void *buf, sw_chan *ch);
int sw_variant_ask(void *ctx, int item);
void sw_variant_done(void *ctx, int item, const void *buf);
void sw_variant_end(void *ctx, int item, int ok);

/* sweep_vary.c */
int sw_vary_parse(char *spec, sw_axis *a, char *err, size_t errlen);
int cmd_vary(const char *path, const char *config, sw_axis *ax, int nax, const char *out, int jobs, int shard_i,
             int shard_n);

/* sweep_vary_report.c */
sw_vrow *sw_vrows_push(sw_vrows *rs);
sw_vrow *sw_vrows_find(const sw_vrows *rs, const char *config);
extern const char sw_vary_header[];
void sw_vary_write_row(FILE *f, const sw_vrow *r);
int sw_vary_csv_read(const char *path, sw_vrows *rs, char *err, size_t errlen);
int sw_vary_finish(sw_vrows *rs, const char *out, const char *graph, const char *config);

#endif
