/* test_graph.c: the graph text format (docs/graph-format.md) and its parser
 * (graph/graph.c): every line kind, arguments of every kind, the
 * printer's round trip, every error with its file:line:col, the
 * topological sort, loading an export directory, and mutated input that
 * must never crash. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph.h"
#include "testutil.h"

static char err[1024];

/* The lines of mlp_text that print as they are written. */
#define MLP_WEIGHTS_LINE "weights \"weights.safetensors\"\n"
#define MLP_CANONICAL_LINES MLP_WEIGHTS_LINE MLP_BODY_LINES
#define MLP_BODY_LINES                                                                                                 \
    "input %x: f32[8, 64]\n"                                                                                           \
    "param %fc1_weight: f32[256, 64] = \"fc1.weight\"\n"                                                               \
    "param %fc1_bias: f32[256] = \"fc1.bias\"\n"                                                                       \
    "%t: f32[64, 256] = aten.t.default(%fc1_weight)\n"                                                                 \
    "%h: f32[8, 256] = aten.addmm.default(%fc1_bias, %x, %t)\n"                                                        \
    "%g: f32[8, 256] = aten.gelu.default(%h, approximate=\"none\")\n"                                                  \
    "output %g\n"

static const char *mlp_text = "# BERT-style MLP block, exported by tools/export.py\n"
                              "graph mlp\n" MLP_CANONICAL_LINES "hint work_div gelu=4x8   # a comment after a hint\n";

static gr_graph *parse_ok(const char *text)
{
    err[0] = 0;
    gr_graph *g = gr_graph_parse(text, "t.txt", err, sizeof err);
    if (!g)
        fprintf(stderr, "\n    parse: %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    return g;
}

/* The message of a text that must not parse. */
static void expect_error(const char *text, const char *msg)
{
    err[0] = 0;
    gr_graph *g = gr_graph_parse(text, "t.txt", err, sizeof err);
    CU_ASSERT_PTR_NULL(g);
    gr_graph_free(g);
    if (strcmp(err, msg) != 0)
        fprintf(stderr, "\n    expected '%s'\n    got      '%s'\n", msg, err);
    CU_ASSERT_STRING_EQUAL(err, msg);
}

static char *print_to_string(const gr_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gr_graph_print(g, f);
    fclose(f);
    return buf;
}

/* p1, a graph's print, parses back to a graph that prints the same. */
static void expect_round_trip(const char *p1)
{
    gr_graph *g2 = parse_ok(p1);
    char *p2 = print_to_string(g2);
    CU_ASSERT_STRING_EQUAL(p1, p2);
    free(p2);
    gr_graph_free(g2);
}

static void test_parse_reads_every_line_kind(void)
{
    gr_graph *g = parse_ok(mlp_text);
    CU_ASSERT_STRING_EQUAL(g->name, "mlp");
    CU_ASSERT_STRING_EQUAL(g->path, "t.txt");
    CU_ASSERT_STRING_EQUAL(g->weights, "weights.safetensors");
    CU_ASSERT_EQUAL(g->nvalues, 6);
    CU_ASSERT_EQUAL_FATAL(g->ninputs, 1);
    const gr_value *x = &g->values[g->inputs[0]];
    CU_ASSERT_STRING_EQUAL(x->name, "x");
    CU_ASSERT_EQUAL(x->kind, GR_VAL_INPUT);
    CU_ASSERT_EQUAL(x->type.dtype, GR_F32);
    CU_ASSERT_EQUAL(x->type.rank, 2);
    CU_ASSERT_EQUAL(x->type.shape[0], 8);
    CU_ASSERT_EQUAL(x->type.shape[1], 64);
    CU_ASSERT_EQUAL(x->line, 4);
    CU_ASSERT_EQUAL(x->node, -1);
    CU_ASSERT_EQUAL_FATAL(g->nparams, 2);
    const gr_value *w = &g->values[g->params[0]];
    CU_ASSERT_STRING_EQUAL(w->name, "fc1_weight");
    CU_ASSERT_STRING_EQUAL(w->param_key, "fc1.weight");
    CU_ASSERT_EQUAL(w->kind, GR_VAL_PARAM);
    CU_ASSERT_STRING_EQUAL(g->values[g->params[1]].param_key, "fc1.bias");
    CU_ASSERT_EQUAL_FATAL(g->nnodes, 3);
    const gr_node *h = &g->nodes[1];
    CU_ASSERT_STRING_EQUAL(h->op, "aten.addmm.default");
    CU_ASSERT_STRING_EQUAL(h->base, "addmm");
    CU_ASSERT_EQUAL(h->line, 8);
    CU_ASSERT_EQUAL(h->col, 19);
    CU_ASSERT_EQUAL(h->nargs, 3);
    CU_ASSERT_EQUAL(h->args[0].kind, GR_ARG_VALUE);
    CU_ASSERT_EQUAL(h->args[0].value, g->params[1]);
    CU_ASSERT_EQUAL(h->args[1].value, g->inputs[0]);
    CU_ASSERT_EQUAL(h->args[2].value, g->nodes[0].out);
    CU_ASSERT_STRING_EQUAL(g->values[h->out].name, "h");
    CU_ASSERT_EQUAL(g->values[h->out].node, 1);
    CU_ASSERT_STRING_EQUAL(g->nodes[2].base, "gelu");
    CU_ASSERT_STRING_EQUAL(g->nodes[2].args[1].key, "approximate");
    CU_ASSERT_STRING_EQUAL(g->nodes[2].args[1].s, "none");
    CU_ASSERT_EQUAL_FATAL(g->noutputs, 1);
    CU_ASSERT_STRING_EQUAL(g->values[g->outputs[0]].name, "g");
    CU_ASSERT_EQUAL_FATAL(g->nhints, 1);
    CU_ASSERT_STRING_EQUAL(g->hints[0], "work_div gelu=4x8");
    CU_ASSERT_EQUAL(gr_graph_find(g, "h"), h->out);
    CU_ASSERT_EQUAL(gr_graph_find(g, "%h"), h->out);
    CU_ASSERT_EQUAL(gr_graph_find(g, "nope"), -1);
    CU_ASSERT_EQUAL(gr_ttype_numel(&w->type), 256 * 64);
    gr_graph_free(g);
}

static void test_print_gives_the_canonical_text_and_round_trips(void)
{
    gr_graph *g = parse_ok(mlp_text);
    char *p1 = print_to_string(g);
    /* a blank line where the comment was: each line prints at its line in the file */
    const char *want = "graph mlp\n" MLP_WEIGHTS_LINE "\n" MLP_BODY_LINES "hint work_div gelu=4x8\n";
    CU_ASSERT_STRING_EQUAL(p1, want);
    expect_round_trip(p1);
    free(p1);
    gr_graph_free(g);
}

static void test_print_round_trips_every_argument_kind(void)
{
    const char *text = "graph args\n"
                       "input %x: f32[2, 3]\n"
                       "input %s: bool[]\n"
                       "%a: f32[2, 3] = aten.foo.bar(%x, 3, -1, 0.5, 1e-05, -inf, inf, nan, True, False, None, "
                       "\"a\\\"b\\\\c\", f16, [0, 2, 1], [[1, 2], [%x, %s]], [], 1e+300, 0.1, -0.0, "
                       "key=-9223372036854775808, d=bf16)\n"
                       "output %a, %x\n";
    gr_graph *g = parse_ok(text);
    const gr_node *n = &g->nodes[0];
    CU_ASSERT_EQUAL_FATAL(n->nargs, 21);
    CU_ASSERT_EQUAL(n->args[1].kind, GR_ARG_INT);
    CU_ASSERT_EQUAL(n->args[1].i, 3);
    CU_ASSERT_EQUAL(n->args[2].i, -1);
    CU_ASSERT_EQUAL(n->args[3].kind, GR_ARG_FLOAT);
    CU_ASSERT_EQUAL(n->args[3].f, 0.5);
    CU_ASSERT_EQUAL(n->args[4].f, 1e-05);
    CU_ASSERT(isinf(n->args[5].f) && n->args[5].f < 0);
    CU_ASSERT(isinf(n->args[6].f) && n->args[6].f > 0);
    CU_ASSERT(isnan(n->args[7].f));
    CU_ASSERT_EQUAL(n->args[8].kind, GR_ARG_BOOL);
    CU_ASSERT_EQUAL(n->args[8].i, 1);
    CU_ASSERT_EQUAL(n->args[9].i, 0);
    CU_ASSERT_EQUAL(n->args[10].kind, GR_ARG_NONE);
    CU_ASSERT_EQUAL(n->args[11].kind, GR_ARG_STR);
    CU_ASSERT_STRING_EQUAL(n->args[11].s, "a\"b\\c");
    CU_ASSERT_EQUAL(n->args[12].kind, GR_ARG_DTYPE);
    CU_ASSERT_EQUAL(n->args[12].i, GR_F16);
    CU_ASSERT_EQUAL(n->args[13].kind, GR_ARG_LIST);
    CU_ASSERT_EQUAL_FATAL(n->args[13].nitems, 3);
    CU_ASSERT_EQUAL(n->args[13].items[1].i, 2);
    const gr_arg *nest = &n->args[14];
    CU_ASSERT_EQUAL_FATAL(nest->nitems, 2);
    CU_ASSERT_EQUAL(nest->items[0].kind, GR_ARG_LIST);
    CU_ASSERT_EQUAL(nest->items[1].items[0].kind, GR_ARG_VALUE);
    CU_ASSERT_EQUAL(nest->items[1].items[1].value, gr_graph_find(g, "s"));
    CU_ASSERT_EQUAL(n->args[15].kind, GR_ARG_LIST);
    CU_ASSERT_EQUAL(n->args[15].nitems, 0);
    CU_ASSERT_EQUAL(n->args[16].f, 1e300);
    CU_ASSERT_EQUAL(n->args[17].f, 0.1);
    CU_ASSERT(n->args[18].f == 0 && signbit(n->args[18].f));
    CU_ASSERT_STRING_EQUAL(n->args[19].key, "key");
    CU_ASSERT_EQUAL(n->args[19].i, INT64_MIN);
    CU_ASSERT_EQUAL(n->args[20].i, GR_BF16);
    CU_ASSERT_EQUAL(g->values[gr_graph_find(g, "s")].type.rank, 0);
    CU_ASSERT_EQUAL(g->values[gr_graph_find(g, "s")].type.dtype, GR_BOOL);
    /* gr_node_arg: by position among positional ones, or by keyword */
    CU_ASSERT_PTR_EQUAL(gr_node_arg(n, 1, NULL), &n->args[1]);
    CU_ASSERT_PTR_EQUAL(gr_node_arg(n, 99, "d"), &n->args[20]);
    CU_ASSERT_PTR_EQUAL(gr_node_arg(n, -1, "key"), &n->args[19]);
    CU_ASSERT_PTR_NULL(gr_node_arg(n, 19, NULL));
    CU_ASSERT_PTR_NULL(gr_node_arg(n, 30, "absent"));
    char *p1 = print_to_string(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(p1, "(%x, 3, -1, 0.5, 1e-05, -inf, inf, nan, True, False, None, \"a\\\"b\\\\c\", "
                                      "f16, [0, 2, 1], [[1, 2], [%x, %s]], [], 1e+300, 0.1, -0.0, "
                                      "key=-9223372036854775808, d=bf16)"));
    expect_round_trip(p1);
    free(p1);
    gr_graph_free(g);
}

static void test_tuple_types_and_getitem(void)
{
    const char *text = "input %x: f32[8, 64]\n"
                       "%ln: (f32[8, 64], f32[8, 1], f32[8, 1]) = aten.native_layer_norm.default(%x, [64], None, "
                       "None, 1e-05)\n"
                       "%y: f32[8, 64] = getitem(%ln, 0)\n"
                       "%r: f32[8, 1] = getitem(%ln, 2)\n"
                       "output %y, %r\n";
    gr_graph *g = parse_ok(text);
    const gr_value *ln = &g->values[gr_graph_find(g, "ln")];
    CU_ASSERT_EQUAL_FATAL(ln->ntuple, 3);
    CU_ASSERT_EQUAL(ln->tuple[0].rank, 2);
    CU_ASSERT_EQUAL(ln->tuple[0].shape[1], 64);
    CU_ASSERT_EQUAL(ln->tuple[2].shape[1], 1);
    char ts[128];
    gr_value_type_str(ln, ts, sizeof ts);
    CU_ASSERT_STRING_EQUAL(ts, "(f32[8, 64], f32[8, 1], f32[8, 1])");
    gr_ttype_str(&ln->tuple[1], ts, sizeof ts);
    CU_ASSERT_STRING_EQUAL(ts, "f32[8, 1]");
    const gr_node *gi = &g->nodes[g->values[gr_graph_find(g, "r")].node];
    CU_ASSERT_STRING_EQUAL(gi->op, "getitem");
    CU_ASSERT_STRING_EQUAL(gi->base, "getitem");
    CU_ASSERT_EQUAL(gi->args[0].value, gr_graph_find(g, "ln"));
    CU_ASSERT_EQUAL(gi->args[1].i, 2);
    CU_ASSERT_STRING_EQUAL(g->name, "t"); /* no graph line: the file's base name */
    gr_graph_free(g);
    g = gr_graph_parse("input %x: f32[1]\noutput %x\n", "dir/3-layer.model.txt", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_STRING_EQUAL(g->name, "_3_layer.model");
    gr_graph_free(g);
    g = gr_graph_parse("input %x: f32[1]\noutput %x\n", NULL, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_STRING_EQUAL(g->name, "graph");
    CU_ASSERT_STRING_EQUAL(g->path, "<graph>");
    CU_ASSERT_PTR_NULL(g->weights);
    gr_graph_free(g);
}

/* A tuple's type of more than 1,024 characters (a split into 120 pieces)
 * prints whole, so that the text parses back (a compiled program embeds
 * it: spyre run FILE.elf --check parses it); it was cut, and the cut, when
 * it fell on a ", ", read past the buffer.  gr_value_type_str cuts it to
 * any size as snprintf would. */
static void test_a_long_tuple_type_prints_whole(void)
{
    enum { N = 120 };
    char text[4096] = "input %x: f32[120, 4]\n%s: (", want[2048] = "(";
    for (int i = 0; i < N; i++) {
        strcat(text, i ? ", f32[1, 4]" : "f32[1, 4]");
        strcat(want, i ? ", f32[1, 4]" : "f32[1, 4]");
    }
    strcat(text, ") = aten.split.Tensor(%x, 1)\n%y: f32[1, 4] = getitem(%s, 119)\noutput %y\n");
    strcat(want, ")");
    gr_graph *g = parse_ok(text);
    char *p1 = print_to_string(g);
    CU_ASSERT_PTR_NOT_NULL(strstr(p1, want));
    expect_round_trip(p1);
    const gr_value *s = &g->values[gr_graph_find(g, "s")];
    const size_t n = strlen(want);
    for (size_t len = 1; len <= n + 1; len++) {
        char *ts = malloc(len);
        gr_value_type_str(s, ts, len);
        CU_ASSERT(strlen(ts) == len - 1 && !strncmp(ts, want, len - 1));
        free(ts);
    }
    free(p1);
    gr_graph_free(g);
}

static void test_ops_in_any_order_are_sorted_keeping_text_order(void)
{
    /* d uses c uses b; a and e are independent.  Text order: d, a, c, e, b. */
    const char *text = "input %x: f32[4]\n"
                       "%d: f32[4] = aten.neg.default(%c)\n"
                       "%a: f32[4] = aten.exp.default(%x)\n"
                       "%c: f32[4] = aten.relu.default(%b)\n"
                       "%e: f32[4] = aten.sin.default(%x)\n"
                       "%b: f32[4] = aten.cos.default(%x)\n"
                       "output %d, %a, %e\n";
    gr_graph *g = parse_ok(text);
    CU_ASSERT_EQUAL_FATAL(g->nnodes, 5);
    const char *want[] = {"a", "e", "b", "c", "d"};
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_STRING_EQUAL(g->values[g->nodes[i].out].name, want[i]);
        CU_ASSERT_EQUAL(g->values[g->nodes[i].out].node, i);
    }
    /* values keep text order */
    CU_ASSERT_STRING_EQUAL(g->values[1].name, "d");
    CU_ASSERT_EQUAL(g->nodes[4].line, 2);
    gr_graph_free(g);
}

static void test_syntax_errors_name_file_line_and_column(void)
{
    expect_error("input %x: f32[2\n", "t.txt:1:16: expected ',' or ']', found end of line");
    expect_error("input %x f32[2]\n", "t.txt:1:10: expected ':', found 'f32'");
    expect_error("input %x: f31[2]\n", "t.txt:1:11: expected a type (f32, f16, bf16, f64, i64, i32 or bool), found 'f31'");
    expect_error("input %x: f32[-2]\n", "t.txt:1:15: expected a dimension (an integer >= 0), found '-2'");
    expect_error("input %x: f32[1, 1, 1, 1, 1, 1, 1, 1, 1]\n", "t.txt:1:39: more than 8 dimensions");
    expect_error("input %x: (f32[2])\n", "t.txt:1:11: expected a tensor type, found '('");
    expect_error("input x: f32[2]\n", "t.txt:1:7: expected a %name, found 'x'");
    expect_error("\n\n  bogus line\n", "t.txt:3:3: expected a line (graph, weights, input, param, state, "
                                        "%NAME: TYPE = OP(...), output, update or hint), found 'bogus'");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.neg.default(%x\n",
                 "t.txt:2:33: expected ',' or ')', found end of line");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.neg.default(%x) extra\n",
                 "t.txt:2:35: expected end of line, found 'extra'");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.f(a=1, %x)\n",
                 "t.txt:2:26: expected a keyword argument (name=value) after a keyword argument, found '%x'");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.f(%x, bogus)\n",
                 "t.txt:2:25: expected an argument, found 'bogus'");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.f(%x, \"abc)\n", "t.txt:2:25: unterminated string");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.f(\"a\\qb\")\n",
                 "t.txt:2:23: unknown escape in string (only \\\" \\\\ \\n \\t)");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.f(99999999999999999999)\n",
                 "t.txt:2:21: integer 99999999999999999999 out of range");
    expect_error("input %x: f32[2]\n%y: f32[2] = 3(%x)\n", "t.txt:2:14: expected an op name, found '3'");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.f(%x) @\n", "t.txt:2:25: expected end of line, found '@'");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.f(\x01)\n", "t.txt:2:21: expected an argument, found byte 0x01");
    expect_error("param %w: f32[2] = w\n", "t.txt:1:20: expected the weight's key as a \"string\", found 'w'");
    expect_error("weights w.safetensors\n", "t.txt:1:9: expected the weights file as a \"string\", found 'w.safetensors'");
    expect_error("graph\n", "t.txt:1:6: expected the graph's name, found end of line");
    expect_error("hint   \n", "t.txt:1:8: expected the hint's text, found end of line");
    expect_error("output\n", "t.txt:1:7: expected a %name, found end of line");
    expect_error("output %a,\n", "t.txt:1:11: expected a %name, found end of line");
}

/* `range=[LO, HI]` on an integer input: parsed, printed back; refused on
 * another dtype, empty, or past +-2^24. */
static void test_an_integer_inputs_or_params_range_parses_and_prints_back(void)
{
    const char *text = "graph r\ninput %v: i64[3, 9] range=[-2, 40]\ninput %b: bool[3]\noutput %v\n";
    gr_graph *g = parse_ok(text);
    const gr_value *v = &g->values[g->inputs[0]], *b = &g->values[g->inputs[1]];
    CU_ASSERT(v->ranged && v->lo == -2 && v->hi == 40);
    CU_ASSERT(!b->ranged);
    char *p1 = print_to_string(g);
    CU_ASSERT_STRING_EQUAL(p1, text);
    expect_round_trip(p1);
    free(p1);
    gr_graph_free(g);
    /* an integer parameter's range, after its key (the exporter writes its values' own) */
    const char *ptext = "graph r\nweights \"w\"\nparam %off: i64[3] = \"off\" range=[0, 10]\noutput %off\n";
    g = parse_ok(ptext);
    const gr_value *o = &g->values[g->params[0]];
    CU_ASSERT(o->ranged && o->lo == 0 && o->hi == 10);
    p1 = print_to_string(g);
    CU_ASSERT_STRING_EQUAL(p1, ptext);
    free(p1);
    gr_graph_free(g);
    expect_error("param %w: f32[2] = \"w\" range=[0, 1]\n",
                 "t.txt:1:24: expected end of line (a range is for an i64 or i32 input or param), found 'range'");
    expect_error("input %x: f32[2] range=[0, 1]\n",
                 "t.txt:1:18: expected end of line (a range is for an i64 or i32 input or param), found 'range'");
    expect_error("input %x: bool[2] range=[0, 1]\n",
                 "t.txt:1:19: expected end of line (a range is for an i64 or i32 input or param), found 'range'");
    expect_error("input %x: i64[2] range=[0]\n", "t.txt:1:26: expected ',', found ']'");
    expect_error("input %x: i64[2] range=[1, 0]\n", "t.txt:1:18: range=[1, 0] is empty");
    /* past 2^24 fp32 host copies would round values inside it */
    expect_error("input %x: i64[2] range=[16777216, 16777219]\n",
                 "t.txt:1:18: range=[16777216, 16777219] reaches past +-16777216, the integers fp32 holds exactly");
    expect_error("input %x: i64[2] range=[-16777217, 0]\n",
                 "t.txt:1:18: range=[-16777217, 0] reaches past +-16777216, the integers fp32 holds exactly");
}

static void test_semantic_errors_name_file_and_line(void)
{
    expect_error("input %x: f32[2]\n\ninput %x: f32[3]\noutput %x\n", "t.txt:3: %x is defined twice (first at line 1)");
    expect_error("input %x: f32[2]\n%x: f32[2] = aten.neg.default(%x)\noutput %x\n",
                 "t.txt:2: %x is defined twice (first at line 1)");
    expect_error("input %x: f32[2]\n%y: f32[2] = aten.add.Tensor(%x, [%q])\noutput %y\n", "t.txt:2: %q is not defined");
    expect_error("input %x: f32[2]\noutput %x, %nope\n", "t.txt:2: %nope is not defined");
    expect_error("input %x: f32[2]\n", "t.txt: missing output line (a graph names its outputs: output %a, %b)");
    expect_error("", "t.txt: missing output line (a graph names its outputs: output %a, %b)");
    expect_error("input %x: f32[2]\noutput %x\noutput %x\n", "t.txt:3: a second output line (the first is line 2)");
    expect_error("graph a\ngraph b\noutput %x\n", "t.txt:2: a second graph line (the first is line 1)");
    expect_error("weights \"a\"\nweights \"b\"\n", "t.txt:2: a second weights line (the first is line 1)");
    /* a -> c -> b -> a in data flow: b uses a, c uses b... written as a uses b, b uses c, c uses a */
    expect_error("input %x: f32[2]\n"
                 "%a: f32[2] = aten.neg.default(%b)\n"
                 "%b: f32[2] = aten.neg.default(%c)\n"
                 "%c: f32[2] = aten.add.Tensor(%x, %a)\n"
                 "output %a\n",
                 "t.txt:2: cycle: %a -> %c -> %b -> %a");
    expect_error("input %x: f32[2]\n%z: f32[2] = aten.neg.default(%x)\n%a: f32[2] = aten.neg.default(%a)\noutput %a\n",
                 "t.txt:3: cycle: %a -> %a");
    /* a cycle downstream of a good node, reported from its earliest line */
    expect_error("input %x: f32[2]\n"
                 "%u: f32[2] = aten.neg.default(%q)\n"
                 "%p: f32[2] = aten.neg.default(%x)\n"
                 "%q: f32[2] = aten.add.Tensor(%p, %r)\n"
                 "%r: f32[2] = aten.neg.default(%q)\n"
                 "output %u\n",
                 "t.txt:4: cycle: %q -> %r -> %q");
}

static void test_load_reads_an_export_directory(void)
{
    char dir[512], file[600], werr[1200];
    tu_tmpfile("-exportdir", dir, sizeof dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0755), 0);
    snprintf(file, sizeof file, "%s/graph.txt", dir);
    FILE *f = fopen(file, "w");
    fputs("weights \"w.safetensors\"\ninput %x: f32[2]\n%y: f32[2] = aten.relu.default(%x)\noutput %y\n", f);
    fclose(f);
    gr_graph *g = gr_graph_load(dir, err, sizeof err);
    if (!g)
        fprintf(stderr, "\n    %s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_STRING_EQUAL(g->path, file);
    /* named after the directory, made a NAME: "tmp-123-4-exportdir" -> "tmp_123_4_exportdir" */
    char base[512];
    snprintf(base, sizeof base, "%s", strrchr(dir, '/') + 1);
    for (char *c = base; *c; c++)
        if (*c == '-')
            *c = '_';
    CU_ASSERT_STRING_EQUAL(g->name, base);
    char *w = gr_graph_relpath(g, g->weights);
    snprintf(werr, sizeof werr, "%s/w.safetensors", dir);
    CU_ASSERT_STRING_EQUAL(w, werr);
    free(w);
    w = gr_graph_relpath(g, "/abs/file");
    CU_ASSERT_STRING_EQUAL(w, "/abs/file");
    free(w);
    gr_graph_free(g);
    /* the file itself: named after the file */
    g = gr_graph_load(file, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_STRING_EQUAL(g->name, "graph");
    gr_graph_free(g);
    /* errors carry the file's path */
    f = fopen(file, "w");
    fputs("input %x: f32[2]\noutput %y\n", f);
    fclose(f);
    CU_ASSERT_PTR_NULL(gr_graph_load(dir, err, sizeof err));
    snprintf(werr, sizeof werr, "%s:2: %%y is not defined", file);
    CU_ASSERT_STRING_EQUAL(err, werr);
    f = fopen(file, "wb");
    fputs("input %x: f32[2]\n", f);
    fputc(0, f);
    fputs("output %x\n", f);
    fclose(f);
    CU_ASSERT_PTR_NULL(gr_graph_load(file, err, sizeof err));
    snprintf(werr, sizeof werr, "%s:2: a NUL byte in the text", file);
    CU_ASSERT_STRING_EQUAL(err, werr);
    remove(file);
    CU_ASSERT_PTR_NULL(gr_graph_load(dir, err, sizeof err));
    snprintf(werr, sizeof werr, "%s: cannot open: No such file or directory", file);
    CU_ASSERT_STRING_EQUAL(err, werr);
    rmdir(dir);
}

static void test_dtype_names_and_parse(void)
{
    const char *want[] = {"f32", "f16", "bf16", "f64", "i64", "i32", "bool"};
    for (int d = 0; d < GR_NDTYPES; d++) {
        CU_ASSERT_STRING_EQUAL(gr_dtype_names[d], want[d]);
        CU_ASSERT_EQUAL(gr_dtype_parse(want[d]), d);
    }
    CU_ASSERT_EQUAL(gr_dtype_parse("f8"), -1);
    gr_ttype t = {GR_I64, 0, {0}};
    CU_ASSERT_EQUAL(gr_ttype_numel(&t), 1);
    char s[32];
    gr_ttype_str(&t, s, sizeof s);
    CU_ASSERT_STRING_EQUAL(s, "i64[]");
    t.rank = 2;
    t.shape[0] = 3;
    t.shape[1] = 0;
    CU_ASSERT_EQUAL(gr_ttype_numel(&t), 0);
}

/* Deterministic mutations of a real export: every result is a graph that
 * prints and parses back to the same text, or a one-line message with the
 * file's name.  (Run under SPYRE_SANITIZE for memory errors.) */
static void test_mutated_text_never_crashes(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/traces/encoder_small/graph.txt", SPYRE_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    char *seed;
    size_t n0;
    if (f) {
        fseek(f, 0, SEEK_END);
        n0 = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        seed = malloc(n0 + 1);
        n0 = fread(seed, 1, n0, f);
        fclose(f);
    } else {
        n0 = strlen(mlp_text);
        seed = malloc(n0 + 1);
        memcpy(seed, mlp_text, n0);
    }
    static const char *toks[] = {"%", "%a", ":", "=", "(", ")", "[", "]", ",", "\n", "\"", "\\", "#", "-inf",
                                 "(f32[2], i64[])", "getitem", "output %", "input %", "[[[", "\xff", "%t"};
    uint64_t s = 12345;
    char *buf = malloc(n0 + 256);
    int parsed = 0, failed = 0;
    for (int it = 0; it < 3000; it++) {
        size_t n = n0;
        memcpy(buf, seed, n);
        for (int m = 0; m < 3; m++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(s >> 33) % (n ? n : 1);
            int kind = (int)(s >> 20) % 3;
            if (kind == 0 && n)
                buf[pos] = (char)(s >> 40 | 1);
            else if (kind == 1 && n)
                memmove(buf + pos, buf + pos + 1, n - pos - 1), n--;
            else {
                const char *t = toks[(s >> 45) % (sizeof toks / sizeof toks[0])];
                size_t l = strlen(t);
                memmove(buf + pos + l, buf + pos, n - pos);
                memcpy(buf + pos, t, l);
                n += l;
            }
        }
        buf[n] = 0;
        err[0] = 0;
        gr_graph *g = gr_graph_parse(buf, "fz.txt", err, sizeof err);
        if (!g) {
            failed++;
            CU_ASSERT(strncmp(err, "fz.txt:", 7) == 0 && !strchr(err, '\n'));
            continue;
        }
        parsed++;
        char *p1 = print_to_string(g);
        expect_round_trip(p1);
        free(p1);
        gr_graph_free(g);
    }
    CU_ASSERT(parsed > 0 && failed > 0);
    free(buf);
    free(seed);
}

int main(void)
{
    static const tu_test tests[] = {
        {"parse reads every line kind", test_parse_reads_every_line_kind},
        {"print gives the canonical text and round trips", test_print_gives_the_canonical_text_and_round_trips},
        {"print round trips every argument kind", test_print_round_trips_every_argument_kind},
        {"tuple types and getitem", test_tuple_types_and_getitem},
        {"a long tuple type prints whole", test_a_long_tuple_type_prints_whole},
        {"ops in any order are sorted keeping text order", test_ops_in_any_order_are_sorted_keeping_text_order},
        {"syntax errors name file line and column", test_syntax_errors_name_file_line_and_column},
        {"semantic errors name file and line", test_semantic_errors_name_file_and_line},
        {"an integer input's or param's range parses and prints back",
         test_an_integer_inputs_or_params_range_parses_and_prints_back},
        {"load reads an export directory", test_load_reads_an_export_directory},
        {"dtype names and parse", test_dtype_names_and_parse},
        {"mutated text never crashes", test_mutated_text_never_crashes},
        {NULL, NULL},
    };
    return tu_run("graph", tests);
}
