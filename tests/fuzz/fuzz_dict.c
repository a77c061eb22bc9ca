/* fuzz_dict: prints the libFuzzer dictionary of a target (asm, graph,
 * compile, config, safetensors) from the tables the parsers use: the
 * instruction table and its operand names, the decomposition rules' op
 * names, the keys of the reference configuration (it must set every key),
 * the safetensors dtype names.  Words the parsers spell only in their code
 * (directives, line keywords, JSON keys) are listed here.  The ELF target
 * has none: its strings are section names, which libFuzzer picks up from
 * the reader's comparisons. */
#include "cc.h"
#include "isa.h"
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void word(const char *w)
{
    putchar('"');
    for (const char *c = w; *c; c++)
        printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    puts("\"");
}

static void names(const char *const *list)
{
    for (; list && *list; list++)
        word(*list);
}

static void asm_dict(void)
{
    static const char *const directives[] = {".config", ".core", ".kernel", ".endkernel", ".tensor", ".dram",
                                             ".weights", ".const", ".graph", "ncores=", "lx=", "stick=",
                                             "dev=", "at=", "bytes=", "const=", "rec=", NULL};
    names(directives);
    for (int op = 0; op < ISA_NOPS; op++) {
        const isa_opinfo *info = isa_info(op);
        word(info->mnemonic);
        for (int i = 0; i < info->noperands; i++) {
            char w[64];
            snprintf(w, sizeof w, "%s=", info->operands[i].name);
            word(w);
            names(info->operands[i].names);
        }
    }
    names(isa_role_names);
    names(isa_host_dtype_names);
    names(isa_dtype_names);
}

/* The op names of the decomposition rules, from the "op -> into" lines
 * cc_decompositions_print writes, each as "aten.OP(". */
static void graph_dict(void)
{
    static const char *const keywords[] = {"graph ", "weights ", "input ", "param ", "output ", "hint ",
                                           "hint work_div ", "getitem(", "True", "False", "None",
                                           "inf", "nan", NULL};
    names(keywords);
    for (int d = 0; d < GR_NDTYPES; d++)
        word(gr_dtype_names[d]);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cc_decompositions_print(f);
    fclose(f);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char op[128], w[160];
        if (sscanf(line, "%127s", op) == 1) {
            snprintf(w, sizeof w, "aten.%s(", op);
            word(w);
        }
    }
    free(buf);
}

static int config_dict(void)
{
    char line[4096], *path = chip_config_path("spyre");
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }
    free(path);
    word("include");
    while (fgets(line, sizeof line, f)) {
        char key[128];
        if (line[0] != '#' && sscanf(line, " %127[a-z0-9_] =", key) == 1)
            word(key);
    }
    fclose(f);
    return 0;
}

static void safetensors_dict(void)
{
    static const char *const keys[] = {"\"dtype\"", "\"shape\"", "\"data_offsets\"", "\"__metadata__\"", NULL};
    names(keys);
    for (int d = 0; d < RT_ST_NDTYPES; d++) {
        char w[32];
        snprintf(w, sizeof w, "\"%s\"", rt_st_dtype_name((rt_st_dtype)d));
        word(w);
    }
}

/* The SDSC keys and values the reader (sdsc/sd_parse.c) spells. */
static void sdsc_dict(void)
{
    static const char *const keys[] = {
        "\"debug_handle_\"", "\"aten_op\"", "\"numWkSlicesPerDim_\"", "\"coreIdToWkSlice_\"", "\"dscs_\"",
        "\"numCoresUsed_\"", "\"coreIdsUsed_\"", "\"N_\"", "\"dataStageParam_\"", "\"ss_\"",
        "\"scheduleTree_\"", "\"nodeType_\"", "\"allocate\"", "\"ldsIdx_\"", "\"component_\"", "\"hbm\"",
        "\"lx\"", "\"layoutDimOrder_\"", "\"startAddressCoreCorelet_\"", "\"data_\"", "\"coordinates_\"",
        "\"coordInfo\"", "\"elemArr\"", "\"folds\"", "\"dim_prop_func\"", "\"dim_prop_attr\"", "\"Affine\"",
        "\"alpha_\"", "\"factor_\"", "\"label_\"", "\"core_fold\"", "\"corelet_fold\"", "\"row_fold\"",
        "\"elem_arr_0\"", "\"elem_arr_1\"", "\"labeledDs_\"", "\"dsName_\"", "\"dsType_\"",
        "\"dataFormat_\"", "\"wordLength\"", "\"SEN169_FP16\"", "\"IEEE_FP32\"", "\"computeOp_\"",
        "\"exUnit\"", "\"sfp\"", "\"pt\"", "\"opFuncName\"", "\"inputLabeledDs\"", "\"outputLabeledDs\"",
        "\"constantInfo_\"", "\"attributes_\"", "\"mb\"", "\"out\"", "\"in\"", "\"x\"", "\"[0, 0, 0]\"", NULL};
    names(keys);
}

/* The MLIR parser has no keyword table: the words its grammar knows and
 * the ones KTIR programs use most. */
static void mlir_dict(void)
{
    static const char *const words[] = {
        "module", "func.func", "affine_map<", "affine_set<", "dense<", "tensor<",
        "memref<", "vector<", "index", "f16", "f32", "i32", "->", ">=",
        "==", "floordiv", "ceildiv", "mod", "!ktdp.access_tile<", "#ktdp.memory_space<",
        "ktdp.load", "scf.for", "iter_args", "^bb0", "attributes", "0xFC00", NULL};
    names(words);
}

/* The KTIR compiler's ops and attributes, beside the MLIR words. */
static void ktir_dict(void)
{
    static const char *const words[] = {
        "ktdp.get_compute_tile_id", "ktdp.construct_memory_view", "ktdp.construct_distributed_memory_view",
        "ktdp.construct_access_tile", "ktdp.construct_indirect_access_tile", "ktdp.store",
        "ktdp.inter_tile_produce", "ktdp.inter_tile_reduce", "ind(", "intermediate_variables",
        "coordinate_set", "access_tile_set", "access_tile_order", "variables_space_set", "sizes:", "strides:",
        "grid = [", "global", "ct_local", "arith.constant", "arith.addi", "arith.muli", "arith.addf", "arith.divf",
        "math.exp", "linalg.matmul", "linalg.reduce", "linalg.transpose", "linalg.broadcast", "linalg.generic",
        "tensor.empty()", "tensor.splat", "tensor.extract", "scf.if", "scf.yield", "dimensions = [", NULL};
    mlir_dict();
    names(words);
}

/* The sdscbundle ops and attributes bundle.mlir's reader (sdsc/sd_mlir.c) knows. */
static void bundle_dict(void)
{
    static const char *const words[] = {
        "sdscbundle.input_arg_extract", "sdscbundle.sdsc_execute", "!sdscbundle.input_arg<index>",
        "value from", "arith.constant", "arith.addi", "sdsc_filename", "\"symbol_ids\"", "\"sdsc_0.json\"",
        "%arg_0", "%arg_0_base_addr", "\f", NULL};
    names(words);
}

int main(int argc, char **argv)
{
    const char *t = argc == 2 ? argv[1] : "";
    if (!strcmp(t, "asm"))
        asm_dict();
    else if (!strcmp(t, "graph") || !strcmp(t, "compile"))
        graph_dict();
    else if (!strcmp(t, "config"))
        return config_dict();
    else if (!strcmp(t, "safetensors"))
        safetensors_dict();
    else if (!strcmp(t, "sdsc"))
        sdsc_dict();
    else if (!strcmp(t, "mlir"))
        mlir_dict();
    else if (!strcmp(t, "ktir"))
        ktir_dict();
    else if (!strcmp(t, "sdsc_bundle")) {
        sdsc_dict();
        mlir_dict();
        bundle_dict();
    }
    else if (strcmp(t, "elf")) {
        fprintf(stderr, "usage: fuzz_dict asm|elf|graph|compile|config|safetensors|sdsc|mlir|ktir|sdsc_bundle\n");
        return 2;
    }
    return 0;
}
