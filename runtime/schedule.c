/* schedule.c: the launch order a caller declares (rt_set_schedule), which
 * the residency policy reads to see how soon a program runs again. */
#include "rt_internal.h"

#include <stdlib.h>
#include <string.h>

int rt_set_schedule(rt_device *dev, rt_program *const *order, size_t n, char *err, size_t errlen)
{
    for (size_t k = 0; k < n; k++) {
        const rt_program *q = dev->programs;
        while (q && q != order[k])
            q = q->next;
        if (!q)
            return isa_errf(err, errlen, "rt_set_schedule: entry %zu is not a program loaded on this device", k);
    }
    rt_program **s = NULL;
    if (n) {
        s = malloc(n * sizeof *s);
        if (!s)
            return isa_errf(err, errlen, "rt_set_schedule: out of host memory");
        memcpy(s, order, n * sizeof *s);
    }
    free(dev->sched);
    dev->sched = s;
    dev->nsched = n;
    dev->sched_pos = 0;
    return 0;
}

size_t rt_sched_from(rt_program *prog, int advance)
{
    rt_device *dev = prog->dev;
    if (!dev->nsched || !advance)
        return dev->sched_pos;
    for (size_t j = 0; j < dev->nsched; j++) {
        size_t k = (dev->sched_pos + j) % dev->nsched;
        if (dev->sched[k] == prog) {
            dev->sched_pos = (k + 1) % dev->nsched;
            break;
        }
    }
    return dev->sched_pos; /* unchanged when the schedule does not run prog */
}

void rt_sched_forget(rt_program *prog)
{
    rt_device *dev = prog->dev;
    size_t kept = 0, pos = dev->sched_pos;
    for (size_t k = 0; k < dev->nsched; k++) {
        if (dev->sched[k] == prog) {
            if (k < dev->sched_pos)
                pos--;
            continue;
        }
        dev->sched[kept++] = dev->sched[k];
    }
    dev->nsched = kept;
    dev->sched_pos = kept ? pos % kept : 0;
}

/* Launches until q's next one, counting from schedule position `from`;
 * UINT64_MAX when the schedule never runs it. */
uint64_t rt_sched_next_use(const rt_device *dev, const rt_program *q, size_t from)
{
    for (size_t j = 0; j < dev->nsched; j++)
        if (dev->sched[(from + j) % dev->nsched] == q)
            return j;
    return UINT64_MAX;
}
