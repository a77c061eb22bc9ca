/* tp.h: `spyre run GRAPH --tp N` as main.c's run command sees it (tp.c:
 * the graph split for N cards, each card simulated in a thread of its own,
 * or under mpirun in a rank of its own, tp_mpi.c; docs/multicard.md). */
#ifndef SPYRE_TP_H
#define SPYRE_TP_H

#include "cc.h"
#include "rt.h"

/* Under mpirun with several ranks a command that runs its cards in one
 * process (or runs one card) would run whole in every rank, each writing
 * the same output: rank 0 prints "spyre CMD: under mpirun with N ranks:
 * why" and every rank gets exit status 2.  0 otherwise (no MPI needed:
 * the launcher's environment says). */
int tp_refuse_mpirun(const char *cmd, const char *why);

/* A split of GRAPH for ncards with no row-parallel linear (a model's
 * heads that ncards does not divide): every card computes the whole graph,
 * so a run's numbers are one card's.  Says so on stderr, once per process
 * (spyre run, generate, serve's layer graphs: its ends are whole by design). */
void tp_note_whole(const char *graph, int ncards, const cc_tp_plan *p);

/* Does the run's command line ask for several cards? */
int tp_wanted(int argc, char **argv);
/* The run; an exit status. */
int tp_run(int argc, char **argv);
/* `spyre compile GRAPH --tp N -o DIR`; an exit status. */
int tp_compile(int argc, char **argv);

/* GRAPH split for ncards cards of `system` (its chip, or the chip config
 * `config` when not NULL) and run timing-only, as `spyre run GRAPH --tp N
 * --no-values` does (spyre serve's step costs): the slowest card's cycles
 * and the bytes of one card's parameters (DL16; state is not a parameter).
 * 0, or -1 with one line in err. */
int tp_timing(const char *graph, int ncards, const char *system, const char *config, double *cycles,
              double *param_bytes, char *err, size_t errlen);

/* Programs split for several cards kept loaded between runs (spyre
 * generate --tp N: a prefill and a decode program on every card, each
 * card's part of the KV cache resident in its DRAM).  tp_devices_open:
 * ncards devices of `system`'s chip (config overriding it) with options
 * opt, and the system (for a link: rt_threads_link_new, rt_set_link);
 * tp_load_split: graph g split for those cards, the cards' program loaded
 * on each as progs[c] with card c's shards of the parameters (none when
 * !values), and the split into *plan (when plan is not NULL; the caller
 * frees it with cc_tp_free, before g, which it reads).  0, or -1 with one
 * line in err. */
int tp_devices_open(const char *system, const char *config, int ncards, const sim_options *opt, rt_device **devs,
                    chip_system *sys, char *err, size_t errlen);
int tp_load_split(gr_graph *g, int ncards, rt_device *const *devs, int values, rt_program **progs, cc_tp_plan **plan,
                  char *err, size_t errlen);

#ifdef SPYRE_MPI
/* The MPI link (tp_mpi.c), built when CMake finds MPI.  Is this process
 * a rank started by mpirun?  Then begin gives its rank and the number of
 * ranks (MPI_Init); end is MPI_Finalize. */
int tp_mpi_launched(void);
int tp_mpi_begin(int *rank, int *size);
void tp_mpi_end(void);
/* The link of card `rank` of `size` (rt_set_link with tp_mpi_link_ops). */
void *tp_mpi_link_new(const chip_system *sys, int rank, int size);
void tp_mpi_link_free(void *link);
extern const rt_link_ops tp_mpi_link_ops;
/* Every rank's `bytes` bytes into all on rank 0, in rank order. */
void tp_mpi_gather(const void *mine, size_t bytes, void *all);
/* Every rank's text (texts[rank], lens[rank] bytes) to rank 0: there
 * texts[r] and lens[r] of every rank r of size, malloc'd. */
void tp_mpi_gather_text(char **texts, size_t *lens, int rank, int size);
/* Rank 0's status on every rank; whether any rank says bad. */
int tp_mpi_agree(int status);
int tp_mpi_any(int bad);
#endif

#endif
