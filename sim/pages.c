/* pages.c: the device DRAM's contents, stored sparsely as pages allocated
 * on first write (a page never written reads as zeros). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* n bytes, a multiple of 128, to a 32-byte aligned d with streaming stores:
 * the copy does not read d's lines into the cache first. */
__attribute__((target("avx2"))) static void stream_avx2(uint8_t *d, const uint8_t *a, size_t n)
{
    for (size_t i = 0; i < n; i += 128) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(a + i));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(a + i + 32));
        __m256i x2 = _mm256_loadu_si256((const __m256i *)(a + i + 64));
        __m256i x3 = _mm256_loadu_si256((const __m256i *)(a + i + 96));
        _mm256_stream_si256((__m256i *)(d + i), x0);
        _mm256_stream_si256((__m256i *)(d + i + 32), x1);
        _mm256_stream_si256((__m256i *)(d + i + 64), x2);
        _mm256_stream_si256((__m256i *)(d + i + 96), x3);
    }
    _mm_sfence(); /* the stores are weakly ordered: done before anyone (a worker) reads d */
}
#endif

void sim_copy_uncached(void *d, const void *a, size_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if ((uintptr_t)d % 32 == 0 && n % 128 == 0 && __builtin_cpu_supports("avx2")) {
        stream_avx2(d, a, n);
        return;
    }
#endif
    memcpy(d, a, n);
}

static uint8_t *page_for_write(sim *s, uint64_t page)
{
    s->page_serial[page] = ++s->dram_serial;
    if (!s->pages[page]) {
        s->pages[page] = calloc(1, s->cfg.dram_page_bytes);
        if (!s->pages[page]) {
            fprintf(stderr, "spyre: out of host memory for device DRAM\n");
            abort();
        }
    }
    return s->pages[page];
}

/* The bytes from addr to the end of its page, at most len; *off is addr's
 * offset in that page. */
static size_t page_piece(const sim *s, uint64_t addr, size_t len, uint64_t *off)
{
    *off = addr & (s->cfg.dram_page_bytes - 1);
    size_t n = (size_t)(s->cfg.dram_page_bytes - *off);
    return n > len ? len : n;
}

uint8_t *sim_dram_for_write(sim *s, uint64_t addr, size_t len, size_t *n)
{
    uint64_t off;
    *n = page_piece(s, addr, len, &off);
    return page_for_write(s, addr >> s->page_shift) + off;
}

void sim_dram_copy_in(sim *s, uint64_t addr, const void *src, size_t len)
{
    const uint8_t *p = src;
    sim_pt_fence_dram(s, addr, len);
    while (len) {
        size_t n;
        uint8_t *at = sim_dram_for_write(s, addr, len, &n);
        memcpy(at, p, n);
        addr += n;
        p += n;
        len -= n;
    }
}

void sim_dram_copy_out(sim *s, uint64_t addr, void *dst, size_t len)
{
    uint8_t *p = dst;
    sim_pt_fence_dram(s, addr, len);
    while (len) {
        uint64_t off;
        size_t n = page_piece(s, addr, len, &off);
        const uint8_t *pg = s->pages[addr >> s->page_shift];
        if (pg)
            memcpy(p, pg + off, n);
        else
            memset(p, 0, n);
        addr += n;
        p += n;
        len -= n;
    }
}

int sim_dram_write(sim *s, uint64_t addr, const void *src, size_t len)
{
    if (addr > s->cfg.dram_bytes || len > s->cfg.dram_bytes - addr)
        return -1;
    sim_dram_copy_in(s, addr, src, len);
    return 0;
}

int sim_dram_zero(sim *s, uint64_t addr, uint64_t len)
{
    if (addr > s->cfg.dram_bytes || len > s->cfg.dram_bytes - addr)
        return -1;
    sim_pt_fence_dram(s, addr, (size_t)len);
    while (len) {
        uint64_t off;
        size_t n = page_piece(s, addr, (size_t)len, &off);
        uint8_t *pg = s->pages[addr >> s->page_shift];
        if (pg) { /* a page never written reads as zeros already */
            memset(pg + off, 0, n);
            s->page_serial[addr >> s->page_shift] = ++s->dram_serial;
        }
        addr += n;
        len -= n;
    }
    return 0;
}

uint64_t sim_dram_serial(const sim *s) { return s->dram_serial; }

int sim_dram_unwritten_since(const sim *s, uint64_t addr, uint64_t len, uint64_t serial)
{
    if (!len || addr > s->cfg.dram_bytes || len > s->cfg.dram_bytes - addr)
        return 0;
    for (uint64_t p = addr >> s->page_shift; p <= (addr + len - 1) >> s->page_shift; p++)
        if (s->page_serial[p] > serial)
            return 0;
    return 1;
}

int sim_dram_read(sim *s, uint64_t addr, void *dst, size_t len)
{
    if (addr > s->cfg.dram_bytes || len > s->cfg.dram_bytes - addr)
        return -1;
    sim_dram_copy_out(s, addr, dst, len);
    return 0;
}
