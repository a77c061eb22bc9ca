/* alloc.c: the device DRAM allocator: first-fit over a sorted list of
 * free blocks, aligned to cfg.dram_align, coalescing neighbours on free.
 * Host memory is proportional to the number of blocks, never to DRAM. */
#include "rt_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static int grow(rt_block **v, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    rt_block *n = realloc(*v, c * sizeof *n);
    if (!n)
        return -1;
    *v = n;
    *cap = c;
    return 0;
}

void rt_dram_usage(const rt_device *dev, uint64_t *free_bytes, uint64_t *largest_free)
{
    uint64_t total = 0, largest = 0;
    for (size_t i = 0; i < dev->nfree; i++) {
        total += dev->free_list[i].size;
        if (dev->free_list[i].size > largest)
            largest = dev->free_list[i].size;
    }
    if (free_bytes)
        *free_bytes = total;
    if (largest_free)
        *largest_free = largest;
}

int rt_alloc(rt_device *dev, uint64_t bytes, uint64_t *addr, char *err, size_t errlen)
{
    uint64_t align = dev->cfg.dram_align;
    assert(align && (align & (align - 1)) == 0);
    if (bytes == 0)
        return isa_errf(err, errlen, "rt_alloc: cannot allocate 0 bytes of device DRAM");
    uint64_t size = bytes > UINT64_MAX - (align - 1) ? 0 : (bytes + align - 1) & ~(align - 1);
    size_t i = 0;
    if (size)
        while (i < dev->nfree && dev->free_list[i].size < size)
            i++;
    if (!size || i == dev->nfree) {
        uint64_t total, largest;
        rt_dram_usage(dev, &total, &largest);
        return isa_errf(err, errlen,
                        "rt_alloc: out of device DRAM: cannot allocate %llu bytes (%.2f MiB); "
                        "%llu of %llu bytes free, largest free block %llu bytes (%.2f MiB)",
                        (unsigned long long)bytes, (double)bytes / 1048576.0,
                        (unsigned long long)total, (unsigned long long)dev->cfg.dram_bytes,
                        (unsigned long long)largest, (double)largest / 1048576.0);
    }
    if (grow(&dev->used, &dev->capused, dev->nused + 1))
        return isa_errf(err, errlen, "rt_alloc: out of host memory");
    rt_block *b = &dev->free_list[i];
    assert(b->addr % align == 0);
    *addr = b->addr;
    dev->used[dev->nused++] = (rt_block){b->addr, size};
    if (b->size == size) {
        memmove(b, b + 1, (dev->nfree - i - 1) * sizeof *b);
        dev->nfree--;
    } else {
        b->addr += size;
        b->size -= size;
    }
    if (*addr + size > dev->dirty_end)
        dev->dirty_end = *addr + size;
    return 0;
}

int rt_free(rt_device *dev, uint64_t addr)
{
    size_t u = 0;
    while (u < dev->nused && dev->used[u].addr != addr)
        u++;
    if (u == dev->nused)
        return -1;
    rt_block blk = dev->used[u];
    /* Room for one more free block before anything changes, so a failed
     * realloc leaves the allocator as it was. */
    if (grow(&dev->free_list, &dev->capfree, dev->nfree + 1))
        return -1;
    dev->used[u] = dev->used[--dev->nused];

    /* First free block above addr (binary search). */
    size_t lo = 0, hi = dev->nfree;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (dev->free_list[mid].addr < blk.addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    rt_block *fl = dev->free_list;
    int join_prev = lo > 0 && fl[lo - 1].addr + fl[lo - 1].size == blk.addr;
    int join_next = lo < dev->nfree && blk.addr + blk.size == fl[lo].addr;
    assert(lo == 0 || fl[lo - 1].addr + fl[lo - 1].size <= blk.addr);
    assert(lo == dev->nfree || blk.addr + blk.size <= fl[lo].addr);
    if (join_prev && join_next) {
        fl[lo - 1].size += blk.size + fl[lo].size;
        memmove(&fl[lo], &fl[lo + 1], (dev->nfree - lo - 1) * sizeof *fl);
        dev->nfree--;
    } else if (join_prev) {
        fl[lo - 1].size += blk.size;
    } else if (join_next) {
        fl[lo].addr = blk.addr;
        fl[lo].size += blk.size;
    } else {
        memmove(&fl[lo + 1], &fl[lo], (dev->nfree - lo) * sizeof *fl);
        fl[lo] = blk;
        dev->nfree++;
    }
    return 0;
}
