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

/* ---- the worker pool ---- */

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

/* Run job for items todo[0..ntodo) in up to jobs forked workers, in
 * order, calling done in the parent as each result arrives and answering
 * questions as they can be; on a terminal, a progress line counting
 * `what`.  Returns the number of items whose worker failed (or that could
 * not start). */
int sw_run_pool(void *ctx, const int *todo, int ntodo, int jobs, size_t size, const sw_job *job, const char *what)
{
    sw_worker *w = calloc((size_t)jobs, sizeof *w);
    struct pollfd *pf = calloc((size_t)jobs, sizeof *pf);
    int *slot = calloc((size_t)jobs, sizeof *slot);
    /* a message from a worker: a tag ('r' result, 'q' question) and, for
     * a result, size bytes at MSG_HEAD (aligned) */
    char *msg = malloc(MSG_HEAD + size);
    int next = 0, running = 0, finished = 0, failed = 0;
    int tty = isatty(2);
    double t0 = sw_now_s();
    if (!w || !pf || !slot || !msg) {
        fprintf(stderr, "spyre sweep: out of memory\n");
        free(w);
        free(pf);
        free(slot);
        free(msg);
        return ntodo;
    }
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN); /* a worker that died does not take the parent */
    fflush(NULL);
    while (finished < ntodo) {
        while (running < jobs && next < ntodo) {
            int res[2], ctl[2];
            if (pipe(res)) {
                perror("spyre sweep: pipe");
                break;
            }
            if (pipe(ctl)) {
                perror("spyre sweep: pipe");
                close(res[0]);
                close(res[1]);
                break;
            }
            pid_t pid = fork();
            if (pid < 0) {
                perror("spyre sweep: fork");
                close(res[0]);
                close(res[1]);
                close(ctl[0]);
                close(ctl[1]);
                break;
            }
            if (pid == 0) {
                signal(SIGPIPE, old_pipe);
                for (int s = 0; s < jobs; s++)
                    if (w[s].pid) {
                        close(w[s].rfd);
                        close(w[s].wfd);
                    }
                close(res[0]);
                close(ctl[1]);
                sw_chan ch = {res[1], ctl[0]};
                memset(msg, 0, MSG_HEAD + size);
                msg[0] = 'r';
                int rc = job->work(ctx, todo[next], msg + MSG_HEAD, &ch);
                if (!rc && write(res[1], msg, MSG_HEAD + size) != (ssize_t)(MSG_HEAD + size))
                    rc = -1;
                _exit(rc < 0 ? 1 : 0);
            }
            close(res[1]);
            close(ctl[0]);
            int s = 0;
            while (w[s].pid)
                s++;
            w[s] = (sw_worker){pid, res[0], ctl[1], todo[next], 0};
            next++;
            running++;
        }
        if (!running)
            break; /* could not start a worker */
        int np = 0;
        for (int s = 0; s < jobs; s++) {
            if (!w[s].pid)
                continue;
            if (w[s].asking) {
                int a = job->ask(ctx, w[s].item);
                if (a >= 0) {
                    unsigned char b = (unsigned char)a;
                    if (write(w[s].wfd, &b, 1) != 1) { /* gone: its end is seen below */
                    }
                    w[s].asking = 0;
                }
            }
            pf[np] = (struct pollfd){w[s].rfd, POLLIN, 0};
            slot[np++] = s;
        }
        if (poll(pf, (nfds_t)np, -1) < 0) {
            if (errno == EINTR)
                continue;
            perror("spyre sweep: poll");
            break;
        }
        for (int i = 0; i < np; i++) {
            if (!pf[i].revents)
                continue;
            sw_worker *k = &w[slot[i]];
            ssize_t got = read(k->rfd, msg, 1);
            if (got < 0 && errno == EINTR)
                continue;
            if (got == 1 && msg[0] == 'q' && job->ask) {
                k->asking = 1;
                continue;
            }
            if (got == 1 && msg[0] == 'r' && !read_full(k->rfd, msg + 1, MSG_HEAD - 1 + size)) {
                job->done(ctx, k->item, msg + MSG_HEAD);
                continue;
            }
            /* the end of the worker (or a message it should not send) */
            if (got != 0)
                kill(k->pid, SIGKILL);
            int status = 0;
            while (waitpid(k->pid, &status, 0) < 0 && errno == EINTR)
                ;
            int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == 0;
            failed += !ok;
            if (job->end)
                job->end(ctx, k->item, ok);
            close(k->rfd);
            close(k->wfd);
            k->pid = 0;
            running--;
            finished++;
            if (tty) {
                double el = sw_now_s() - t0;
                fprintf(stderr, "\rsweep: %d/%d %s, %d running, %.1f s, about %.0f s left   ", finished, ntodo, what,
                        running, el, el / finished * (ntodo - finished));
            }
        }
    }
    if (tty)
        fprintf(stderr, "\n");
    signal(SIGPIPE, old_pipe);
    free(msg);
    free(slot);
    free(pf);
    free(w);
    return failed + (ntodo - finished);
}
