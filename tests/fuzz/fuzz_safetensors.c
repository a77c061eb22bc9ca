/* fuzz_safetensors: the safetensors reader (runtime/safetensors.c), which
 * takes a path, so each input is written to a scratch file first.  Every
 * tensor of a file that reads is looked up by name and converted, as the
 * runtime does with weights and inputs. */
#include "fuzzutil.h"
#include "rt.h"

#include <stdlib.h>

static void use_tensor(const rt_st_file *f, const rt_st_tensor *t)
{
    if (rt_st_find(f, t->name) != t)
        fz_fail("rt_st_find does not find the tensor it listed", t->name);
    /* a tensor's bytes lie inside the file, so this is bounded by its size */
    size_t n = t->numel ? (size_t)t->numel : 1;
    float *x = malloc(n * sizeof *x);
    int64_t *k = malloc(n * sizeof *k);
    if (!x || !k)
        fz_fail("malloc", t->name);
    char err[512];
    rt_st_to_f32(t, x);
    (void)rt_st_to_i64(t, f->path, k, err, sizeof err);
    free(x);
    free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_file("input.safetensors", data, size);
    char err[512];
    rt_st_file *f = rt_st_read(path, err, sizeof err);
    if (!f)
        return 0;
    for (int i = 0; i < f->ntensors; i++)
        use_tensor(f, &f->tensors[i]);
    rt_st_free(f);
    return 0;
}
