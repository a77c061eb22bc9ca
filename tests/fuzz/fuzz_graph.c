/* fuzz_graph: the graph text parser (graph/graph.c).  A graph that
 * parses must print as text that parses back to the same print. */
#include "cc.h"
#include "fuzzutil.h"

#include <stdio.h>

/* The text parsed and printed; NULL if it does not parse. */
static void *reprint(const char *text, const char *name, char *err, size_t errlen)
{
    gr_graph *g = gr_graph_parse(text, name, err, errlen);
    if (!g)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        fz_fail("open_memstream", "graph print");
    gr_graph_print(g, f);
    fclose(f);
    gr_graph_free(g);
    return buf;
}

static const fz_format graph_text = {reprint, "fuzz.txt", "printed.txt", "printed graph", "first print", "second print",
    "a printed graph does not parse back", "a printed graph parses back to a different graph", "prints differ"};
FZ_ROUND_TRIP_TARGET(graph_text)
