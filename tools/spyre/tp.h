/* tp.h: `spyre run GRAPH --tp N` as main.c's run command sees it (tp.c:
 * the graph split for N cards, each card simulated in a thread of its own;
 * docs/multicard.md). */
#ifndef SPYRE_TP_H
#define SPYRE_TP_H

/* Does the run's command line ask for several cards? */
int tp_wanted(int argc, char **argv);
/* The run; an exit status. */
int tp_run(int argc, char **argv);
/* `spyre compile GRAPH --tp N -o DIR`; an exit status. */
int tp_compile(int argc, char **argv);

#endif
