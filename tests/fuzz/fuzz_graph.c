/* fuzz_graph: the graph text parser (compiler/graph.c).  A graph that
 * parses must print as text that parses back to the same print. */
#include "cc.h"
#include "fuzzutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static char *print_graph(const cc_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        fz_fail("open_memstream", "graph print");
    cc_graph_print(g, f);
    fclose(f);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_text(data, size), err[512];
    cc_graph *g = cc_graph_parse(text, "fuzz.txt", err, sizeof err);
    free(text);
    if (!g)
        return 0;
    char *first = print_graph(g);
    cc_graph_free(g);
    cc_graph *again = cc_graph_parse(first, "printed.txt", err, sizeof err);
    if (!again) {
        fprintf(stderr, "printed graph:\n%s\n", first);
        fz_fail("a printed graph does not parse back", err);
    }
    char *second = print_graph(again);
    cc_graph_free(again);
    if (strcmp(first, second)) {
        fprintf(stderr, "first print:\n%s\nsecond print:\n%s\n", first, second);
        fz_fail("a printed graph parses back to a different graph", "prints differ");
    }
    free(first);
    free(second);
    return 0;
}
