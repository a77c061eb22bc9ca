/* sweep_tuning.c: tuning files (`tune GRAPH CONFIG KERNEL SPEC`) for spyre compile/run --tuning. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"

/* Does work_div[from..to) already hold KERNEL=...? */
static int tuned_before(const char **work_div, int from, int to, const char *kernel)
{
    size_t len = strlen(kernel);
    for (int i = from; i < to; i++)
        if (!strncmp(work_div[i], kernel, len) && work_div[i][len] == '=')
            return 1;
    return 0;
}

int sweep_tuning_load(const char *path, const char *graph_path, const gr_graph *g, const chip_config *cfg,
                      const char **work_div, int *n, int max, char *err, size_t errlen)
{
    char *text = isa_text_read(path, ISA_TEXT_MAX, err, errlen);
    if (!text)
        return -1;
    char gname[256], *cur = text, *line;
    sw_graph_name(graph_path, gname, sizeof gname);
    int lineno = 0, rc = 0, n0 = *n;
    cc_result *kernels = NULL;
    const gr_graph *graph = g;
    while ((line = isa_text_line(&cur))) {
        lineno++;
        char gk[256], c[256], k[128], s[64], extra;
        if (line[0] == '#' || line[strspn(line, " \t\r")] == 0)
            continue;
        /* exactly four words, each within its field */
        if (sscanf(line, "tune %255s %255s %127s %63s %c", gk, c, k, s, &extra) != 4 || strlen(gk) == 255 ||
            strlen(c) == 255 || strlen(k) == 127 || strlen(s) == 63) {
            snprintf(err, errlen, "%s:%d: expected `tune GRAPH CONFIG KERNEL SPEC`", path, lineno);
            rc = -1;
            break;
        }
        if (strcmp(gk, gname) || strcmp(c, cfg->name))
            continue; /* another graph or chip: ignored */
        if (!kernels) {
            char e[1024];
            kernels = sw_compile_variant(graph, cfg, NULL, NULL, e, sizeof e);
            if (!kernels)
                continue; /* the graph does not compile: cc_compile will say why */
        }
        int known = 0;
        for (int i = 0; i < cc_result_nkernels(kernels); i++)
            known |= !strcmp(k, cc_result_kernel_name(kernels, i));
        if (!known)
            continue; /* a kernel the graph no longer has: ignored */
        if (tuned_before(work_div, n0, *n, k)) { /* the last would win unseen */
            snprintf(err, errlen, "%s:%d: kernel %s of %s on %s is tuned twice", path, lineno, k, gname, c);
            rc = -1;
            break;
        }
        if (*n == max) {
            snprintf(err, errlen, "%s:%d: too many work divisions", path, lineno);
            rc = -1;
            break;
        }
        size_t len = strlen(k) + strlen(s) + 2;
        char *wd = malloc(len);
        if (!wd) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        snprintf(wd, len, "%s=%s", k, s);
        work_div[(*n)++] = wd;
    }
    for (; rc && *n > n0; (*n)--) /* nothing half-applied, nothing leaked */
        free((char *)work_div[*n - 1]);
    free(text);
    cc_result_free(kernels);
    return rc;
}
