/* sweep_pool.c: the worker pool: items run in forked workers that send results and ask the parent. */

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sweep.h"

/* In a worker: ask the parent about this item and wait for the answer
 * (0..255); -1 when the parent is gone. */
int sw_ask(sw_chan *ch)
{
    char q = 'q';
    unsigned char a;
    if (write(ch->to_parent, &q, 1) != 1 || read(ch->from_parent, &a, 1) != 1)
        return -1;
    return a;
}

enum { MSG_HEAD = sizeof(max_align_t) }; /* a result's tag and padding */

typedef struct {
    pid_t pid;
    int rfd, wfd; /* from the worker (results, questions); to it (answers) */
    int item;
    int asking;   /* a question waits for its answer */
} sw_worker;

static int read_full(int fd, void *buf, size_t size)
{
    for (size_t got = 0; got < size;) {
        ssize_t k = read(fd, (char *)buf + got, size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* A pool under way: the job and its items, the workers (w, by slot), the
 * poll set (pf, slot: its worker's slot), the message buffer, the
 * counts. */
typedef struct {
    void *ctx;
    const int *todo;
    int ntodo, jobs;
    size_t size;
    const sw_job *job;
    const char *what;
    sw_worker *w;
    struct pollfd *pf;
    int *slot;
    /* a message from a worker: a tag ('r' result, 'q' question) and, for
     * a result, size bytes at MSG_HEAD (aligned) */
    char *msg;
    int next, running, finished, failed, tty;
    double t0;
    void (*old_pipe)(int);
} sw_pool;

/* In the forked worker of item todo[next]: the job's work, its result
 * sent back, exit 1 on a failure. */
static void pool_child(sw_pool *p, int res[2], int ctl[2])
{
    signal(SIGPIPE, p->old_pipe);
    for (int s = 0; s < p->jobs; s++)
        if (p->w[s].pid) {
            close(p->w[s].rfd);
            close(p->w[s].wfd);
        }
    close(res[0]);
    close(ctl[1]);
    sw_chan ch = {res[1], ctl[0]};
    memset(p->msg, 0, MSG_HEAD + p->size);
    p->msg[0] = 'r';
    int rc = p->job->work(p->ctx, p->todo[p->next], p->msg + MSG_HEAD, &ch);
    if (!rc && write(res[1], p->msg, MSG_HEAD + p->size) != (ssize_t)(MSG_HEAD + p->size))
        rc = -1;
    _exit(rc < 0 ? 1 : 0);
}

/* A worker for the next item, with its two pipes: -1 when it cannot
 * start. */
static int pool_start(sw_pool *p)
{
    int res[2], ctl[2];
    if (pipe(res)) {
        perror("spyre sweep: pipe");
        return -1;
    }
    if (pipe(ctl)) {
        perror("spyre sweep: pipe");
        close(res[0]);
        close(res[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("spyre sweep: fork");
        close(res[0]);
        close(res[1]);
        close(ctl[0]);
        close(ctl[1]);
        return -1;
    }
    if (pid == 0)
        pool_child(p, res, ctl);
    close(res[1]);
    close(ctl[0]);
    int s = 0;
    while (p->w[s].pid)
        s++;
    p->w[s] = (sw_worker){pid, res[0], ctl[1], p->todo[p->next], 0};
    p->next++;
    p->running++;
    return 0;
}

/* The answers that can be given now, and the poll set of the running
 * workers; returns its size. */
static int pool_fds(sw_pool *p)
{
    int np = 0;
    for (int s = 0; s < p->jobs; s++) {
        sw_worker *k = &p->w[s];
        if (!k->pid)
            continue;
        if (k->asking) {
            int a = p->job->ask(p->ctx, k->item);
            if (a >= 0) {
                unsigned char b = (unsigned char)a;
                if (write(k->wfd, &b, 1) != 1) { /* gone: its end is seen below */
                }
                k->asking = 0;
            }
        }
        p->pf[np] = (struct pollfd){k->rfd, POLLIN, 0};
        p->slot[np++] = s;
    }
    return np;
}

/* The end of worker k (got: what its last read returned; anything but
 * its pipe's end means a message it should not send); on a terminal, the
 * progress line. */
static void pool_reap(sw_pool *p, sw_worker *k, ssize_t got)
{
    if (got != 0)
        kill(k->pid, SIGKILL);
    int status = 0;
    while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
        ;
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == 0;
    p->failed += !ok;
    if (p->job->end)
        p->job->end(p->ctx, k->item, ok);
    close(k->rfd);
    close(k->wfd);
    k->pid = 0;
    p->running--;
    p->finished++;
    if (p->tty) {
        double el = sw_now_s() - p->t0;
        fprintf(stderr, "\rsweep: %d/%d %s, %d running, %.1f s, about %.0f s left   ", p->finished, p->ntodo, p->what,
                p->running, el, el / p->finished * (p->ntodo - p->finished));
    }
}

/* What worker k sent: a question, a result, or its end. */
static void pool_read(sw_pool *p, sw_worker *k)
{
    ssize_t got = read(k->rfd, p->msg, 1);
    if (got < 0 && errno == EINTR)
        return;
    if (got == 1 && p->msg[0] == 'q' && p->job->ask) {
        k->asking = 1;
        return;
    }
    if (got == 1 && p->msg[0] == 'r' && !read_full(k->rfd, p->msg + 1, MSG_HEAD - 1 + p->size)) {
        p->job->done(p->ctx, k->item, p->msg + MSG_HEAD);
        return;
    }
    pool_reap(p, k, got);
}

/* Run job for items todo[0..ntodo) in up to jobs forked workers, in
 * order, calling done in the parent as each result arrives and answering
 * questions as they can be; on a terminal, a progress line counting
 * `what`.  Returns the number of items whose worker failed (or that could
 * not start). */
int sw_run_pool(void *ctx, const int *todo, int ntodo, int jobs, size_t size, const sw_job *job, const char *what)
{
    sw_pool p = {ctx, todo, ntodo, jobs, size, job, what, calloc((size_t)jobs, sizeof(sw_worker)),
                 calloc((size_t)jobs, sizeof(struct pollfd)), calloc((size_t)jobs, sizeof(int)),
                 malloc(MSG_HEAD + size), 0, 0, 0, 0, isatty(2), sw_now_s(), NULL};
    if (!p.w || !p.pf || !p.slot || !p.msg) {
        fprintf(stderr, "spyre sweep: out of memory\n");
        free(p.w);
        free(p.pf);
        free(p.slot);
        free(p.msg);
        return ntodo;
    }
    p.old_pipe = signal(SIGPIPE, SIG_IGN); /* a worker that died does not take the parent */
    fflush(NULL);
    while (p.finished < ntodo) {
        while (p.running < jobs && p.next < ntodo && !pool_start(&p))
            ;
        if (!p.running)
            break; /* could not start a worker */
        int np = pool_fds(&p);
        if (poll(p.pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            perror("spyre sweep: poll");
            break;
        }
        for (int i = 0; i < np; i++)
            if (p.pf[i].revents)
                pool_read(&p, &p.w[p.slot[i]]);
    }
    if (p.tty)
        fprintf(stderr, "\n");
    signal(SIGPIPE, p.old_pipe);
    free(p.msg);
    free(p.slot);
    free(p.pf);
    free(p.w);
    return p.failed + (ntodo - p.finished);
}
