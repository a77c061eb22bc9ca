/* serve_req.c: the request file of `spyre serve`: one JSON object a line,
 * {"arrival": SECONDS, "prompt": TOKENS, "output": TOKENS} and optionally
 * "prefix_group": ID with "prefix": TOKENS (the first TOKENS of the prompt
 * are the same for every request of the group).  A mistake is one line
 * naming the file and line (docs/serving.md, "Requests"). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

static int fail(char *err, size_t errlen, const char *path, long line, const char *fmt, ...)
{
    int k = snprintf(err, errlen, "%s:%ld: ", path, line);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < errlen)
        vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

/* Field name of o as a whole count in [lo, hi]; -1 with err. */
static int count_field(const cJSON *o, const char *name, long lo, long hi, int *v, const char *path, long line,
                       char *err, size_t errlen)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!f)
        return fail(err, errlen, path, line, "missing field \"%s\"", name);
    double d = cJSON_IsNumber(f) ? f->valuedouble : NAN;
    if (!(d >= lo && d <= hi) || d != floor(d))
        return fail(err, errlen, path, line, "\"%s\" must be a whole number of tokens from %ld to %ld", name, lo, hi);
    *v = (int)d;
    return 0;
}

/* The group ids seen so far, interned as numbers. */
typedef struct {
    char **name;
    int n;
} sv_groups;

static int group_id(sv_groups *g, const char *name)
{
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->name[i], name))
            return i;
    char **p = realloc(g->name, (size_t)(g->n + 1) * sizeof *p);
    if (!p)
        return -1;
    g->name = p;
    g->name[g->n] = strdup(name);
    return g->name[g->n] ? g->n++ : -1;
}

static int parse_prefix(const cJSON *o, sv_request *r, sv_groups *g, const char *path, char *err, size_t errlen)
{
    const cJSON *grp = cJSON_GetObjectItemCaseSensitive(o, "prefix_group");
    r->prefix_group = -1;
    if (!grp && !cJSON_GetObjectItemCaseSensitive(o, "prefix"))
        return 0;
    if (!grp)
        return fail(err, errlen, path, r->line, "\"prefix\" without \"prefix_group\"");
    char num[32];
    if (cJSON_IsNumber(grp))
        snprintf(num, sizeof num, "%.17g", grp->valuedouble);
    if (!cJSON_IsString(grp) && !cJSON_IsNumber(grp))
        return fail(err, errlen, path, r->line, "\"prefix_group\" must be a string or a number");
    if (count_field(o, "prefix", 0, r->prompt, &r->prefix, path, r->line, err, errlen))
        return fail(err, errlen, path, r->line, "\"prefix\" must be a whole number of tokens from 0 to the prompt's %d",
                    r->prompt);
    r->prefix_group = group_id(g, cJSON_IsString(grp) ? grp->valuestring : num);
    return r->prefix_group < 0 ? fail(err, errlen, path, r->line, "out of host memory") : 0;
}

static int parse_line(const char *text, sv_request *r, sv_groups *g, int context, const char *path, char *err,
                      size_t errlen)
{
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithOpts(text, &end, 0);
    int rc = 0;
    if (!cJSON_IsObject(o)) {
        rc = fail(err, errlen, path, r->line, "not a JSON object");
    } else if (end[strspn(end, " \t\r\n")]) { /* a second object on the line would be dropped */
        rc = fail(err, errlen, path, r->line, "text after the JSON object: one request a line");
    } else {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "arrival");
        if (!a)
            rc = fail(err, errlen, path, r->line, "missing field \"arrival\"");
        else if (!cJSON_IsNumber(a) || !(a->valuedouble >= 0) || isinf(a->valuedouble))
            rc = fail(err, errlen, path, r->line, "\"arrival\" must be a time in seconds >= 0");
        else
            r->arrival = a->valuedouble;
    }
    if (!rc)
        rc = count_field(o, "prompt", 1, 1 << 30, &r->prompt, path, r->line, err, errlen);
    if (!rc)
        rc = count_field(o, "output", 1, 1 << 30, &r->output, path, r->line, err, errlen);
    if (!rc && r->prompt > context)
        rc = fail(err, errlen, path, r->line, "a prompt of %d tokens is longer than the model's context of %d",
                  r->prompt, context);
    if (!rc && r->prompt + r->output - 1 > context)
        rc = fail(err, errlen, path, r->line, "prompt %d and output %d need %d positions, more than the model's context of %d",
                  r->prompt, r->output, r->prompt + r->output - 1, context);
    if (!rc)
        rc = parse_prefix(o, r, g, path, err, errlen);
    cJSON_Delete(o);
    return rc;
}

static int by_arrival(const void *a, const void *b)
{
    const sv_request *x = a, *y = b;
    if (x->arrival != y->arrival)
        return x->arrival < y->arrival ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

sv_request *sv_read_requests(const char *path, int context, int *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", path);
        return NULL;
    }
    sv_request *req = NULL;
    sv_groups g = {0};
    int cap = 0, rc = 0;
    char *text = NULL;
    size_t len = 0;
    *n = 0;
    for (long line = 1; !rc && getline(&text, &len, f) > 0; line++) {
        if (strspn(text, " \t\r\n") == strlen(text))
            continue; /* blank lines are allowed */
        if (*n == cap) {
            sv_request *p = realloc(req, (size_t)(cap = cap ? 2 * cap : 256) * sizeof *p);
            rc = p ? 0 : fail(err, errlen, path, line, "out of host memory");
            req = p ? p : req;
        }
        if (!rc) {
            memset(&req[*n], 0, sizeof req[*n]);
            req[*n].line = line;
            rc = parse_line(text, &req[*n], &g, context, path, err, errlen);
            *n += !rc;
        }
    }
    if (!rc && !*n)
        rc = fail(err, errlen, path, 1, "no requests");
    free(text);
    fclose(f);
    for (int i = 0; i < g.n; i++)
        free(g.name[i]);
    free(g.name);
    if (rc) {
        free(req);
        return NULL;
    }
    qsort(req, (size_t)*n, sizeof *req, by_arrival);
    return req;
}
