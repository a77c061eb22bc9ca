/* test_cli.c: the spyre command: subcommands, reports and exit status
 * (0 ok, 1 mismatch, 2 bad input or usage, 3 the program broke a rule). */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char out[1 << 16];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

static int spyref(const char *fmt, const char *a, const char *b)
{
    char args[2048];
    snprintf(args, sizeof args, fmt, a, b);
    return tu_spyre(args, out, sizeof out);
}

static void test_help_and_usage_errors(void)
{
    CU_ASSERT_EQUAL(tu_spyre("--help", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "run FILE.elf"));
    const char *cmds[] = {"as", "dis", "info", "gen", "run"};
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(spyref("%s --help", cmds[i], ""), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "usage: spyre"));
    }
    CU_ASSERT_EQUAL(tu_spyre("", out, sizeof out), 2);
    CU_ASSERT_EQUAL(tu_spyre("frobnicate", out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown command"));
    CU_ASSERT_EQUAL(tu_spyre("gen gemm 10 x 10 -o /dev/null", out, sizeof out), 2);
    CU_ASSERT_EQUAL(tu_spyre("gen gemm 0 10 10 -o /dev/null", out, sizeof out), 2);
    CU_ASSERT_EQUAL(tu_spyre("run", out, sizeof out), 2);
    CU_ASSERT_EQUAL(tu_spyre("run x.elf --seed -3", out, sizeof out), 2);
}

static void test_gen_run_check_passes_on_both_configs(void)
{
    char elf[512];
    tu_tmpfile(".elf", elf, sizeof elf);
    const char *cfgs[] = {"spyre", "spyre-4core"};
    for (int i = 0; i < 2; i++) {
        char args[1024];
        snprintf(args, sizeof args, "gen gemm 100 70 130 -o %s --config %s", elf, cfgs[i]);
        CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, sizeof out), 0);
        snprintf(args, sizeof args, "run %s --check --seed 7 --config %s", elf, cfgs[i]);
        CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "check C:"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, " ok\n"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "cycles="));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "mac_utilization="));
        snprintf(args, sizeof args, "gen softmax 37 200 -o %s --config %s", elf, cfgs[i]);
        CU_ASSERT_EQUAL_FATAL(tu_spyre(args, out, sizeof out), 0);
        snprintf(args, sizeof args, "run %s --check --config %s", elf, cfgs[i]);
        CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "check y:"));
    }
    remove(elf);
}

static void test_program_for_32_cores_is_refused_by_a_4_core_chip(void)
{
    char elf[512];
    tu_tmpfile(".elf", elf, sizeof elf);
    CU_ASSERT_EQUAL_FATAL(spyref("gen gemm 64 64 64 -o %s%s", elf, ""), 0);
    CU_ASSERT_EQUAL(spyref("run %s --config spyre-4core%s", elf, ""), 2);
    remove(elf);
}

static void test_bad_files_exit_2_with_one_line(void)
{
    char path[512];
    tu_tmpfile(".elf", path, sizeof path);
    write_file(path, "this is not an ELF file\n");
    CU_ASSERT_EQUAL(spyref("run %s%s", path, ""), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, path));
    CU_ASSERT_EQUAL(spyref("info %s%s", path, ""), 2);
    CU_ASSERT_EQUAL(spyref("dis %s%s", "/nonexistent.elf", ""), 2);
    char cfg[512];
    tu_tmpfile(".cfg", cfg, sizeof cfg);
    write_file(cfg, "include = " SPYRE_SOURCE_DIR "/sim/configs/spyre.cfg\ncores = many\n");
    CU_ASSERT_EQUAL(spyref("gen gemm 8 8 8 -o %s --config %s", path, cfg), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ":2: cores"));
    char src[512];
    tu_tmpfile(".s", src, sizeof src);
    write_file(src, ".core 0\n  nop\n  dma.xyz d=0\n");
    CU_ASSERT_EQUAL(spyref("as %s -o %s", src, path), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ":3:"));
    remove(path);
    remove(cfg);
    remove(src);
}

/* Assemble src and run it; returns the run's exit status. */
static int run_asm(const char *src, const char *extra)
{
    char s[512], elf[512], args[1536];
    tu_tmpfile(".s", s, sizeof s);
    tu_tmpfile(".elf", elf, sizeof elf);
    write_file(s, src);
    snprintf(args, sizeof args, "as %s -o %s", s, elf);
    int rc = tu_spyre(args, out, sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "\n%s\n", out);
    snprintf(args, sizeof args, "run %s --config spyre-4core %s", elf, extra);
    rc = tu_spyre(args, out, sizeof out);
    remove(s);
    remove(elf);
    return rc;
}

static void test_rule_breaking_programs_exit_3_naming_core_and_instruction(void)
{
    CU_ASSERT_EQUAL(run_asm(".config spyre-4core ncores=4 lx=262144\n.tensor x input f32 64\n"
                            ".core 1\n  nop\n  dma.ld d=0x40000 a=0x0\n  halt\n", ""), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "core 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "outside LX"));
    /* a race: the vector unit reads what the DMA is still writing */
    CU_ASSERT_EQUAL(run_asm(".config spyre-4core ncores=4 lx=262144\n.tensor x input f32 64\n"
                            ".core 2\n  dma.ld d=0x0 a=0x0\n  sfp.exp d=0x100 a=0x0\n  halt\n", ""), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "race"));
    /* the same program passes with race detection off */
    CU_ASSERT_EQUAL(run_asm(".config spyre-4core ncores=4 lx=262144\n.tensor x input f32 64\n"
                            ".core 2\n  dma.ld d=0x0 a=0x0\n  sfp.exp d=0x100 a=0x0\n  halt\n", "--no-race-check"), 0);
    CU_ASSERT_EQUAL(run_asm(".config spyre-4core ncores=4 lx=262144\n"
                            ".core 0\n  wait u=pt1 t=4\n  halt\n", ""), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "deadlock"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "pt1"));
}

/* Two nested loops of 2^32 - 1 nops ran for ever; the limits stop them
 * with exit 3 and one line naming the core, unit, instruction and flag. */
static void test_a_runaway_program_stops_at_max_insns_or_max_cycles_with_exit_3(void)
{
    const char *src = ".config spyre-4core ncores=4 lx=262144\n"
                      ".core 3\n  loop n=4294967295\n    loop n=4294967295\n      nop\n    endl\n  endl\n  halt\n";
    CU_ASSERT_EQUAL(run_asm(src, "--max-insns 100000"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "core 3 unit seq insn "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "instruction limit (100000; spyre run --max-insns N raises it"));
    CU_ASSERT_PTR_NULL(strchr(out, '\n') ? strchr(strchr(out, '\n') + 1, '\n') : NULL); /* one line */
    CU_ASSERT_EQUAL(run_asm(src, "--max-cycles 20000 --max-insns 0"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cycle limit (20000 cycles; spyre run --max-cycles N raises it"));
    CU_ASSERT_EQUAL(tu_spyre("run x.elf --max-insns -1", out, sizeof out), 2);
    CU_ASSERT_EQUAL(tu_spyre("run x.elf --max-cycles lots", out, sizeof out), 2);
    CU_ASSERT_EQUAL(tu_spyre("run --help", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--max-insns N"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--max-cycles N"));
}

/* An invalid configuration value stops at load (exit 2) with one line
 * naming the file, the key, its value and why, not as "out of host memory". */
static void test_an_invalid_config_value_exits_2_naming_file_key_and_reason(void)
{
    char cfg[512], elf[512], text[1024];
    tu_tmpfile(".cfg", cfg, sizeof cfg);
    tu_tmpfile(".elf", elf, sizeof elf);
    snprintf(text, sizeof text, "include = %s/sim/configs/spyre-4core.cfg\ndram_trefi_ns = 1\n", SPYRE_SOURCE_DIR);
    write_file(cfg, text);
    CU_ASSERT_EQUAL_FATAL(spyref("gen gemm 64 64 64 -o %s --config spyre-4core%s", elf, ""), 0);
    CU_ASSERT_EQUAL(spyref("run %s --config %s", elf, cfg), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ".cfg:2: dram_trefi_ns = 1: must exceed dram_trfc_ns"));
    CU_ASSERT_PTR_NULL(strstr(out, "host memory"));
    remove(cfg);
    remove(elf);
}

static void test_wrong_result_exits_1_with_mismatch(void)
{
    /* claims C = A x B but never writes C */
    CU_ASSERT_EQUAL(run_asm(".config spyre-4core ncores=4 lx=262144\n"
                            ".tensor A input f32 8x8\n.tensor B input f32 8x8\n.tensor C output f32 8x8\n"
                            ".graph %C = aten.mm(%A, %B)\n.core 0\n  halt\n", "--check"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "MISMATCH"));
}

static void test_stats_json_and_trace_files_are_written(void)
{
    char elf[512], js[512], tr[512];
    tu_tmpfile(".elf", elf, sizeof elf);
    tu_tmpfile(".json", js, sizeof js);
    tu_tmpfile(".json", tr, sizeof tr);
    CU_ASSERT_EQUAL_FATAL(spyref("gen softmax 64 128 -o %s --config spyre-4core%s", elf, ""), 0);
    char args[2048];
    snprintf(args, sizeof args, "run %s --config spyre-4core --stats-json %s --trace %s --trace-level kernel", elf, js,
             tr);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
    FILE *f = fopen(js, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char buf[256] = "";
    CU_ASSERT_PTR_NOT_NULL(fgets(buf, sizeof buf, f));
    fclose(f);
    CU_ASSERT_EQUAL(buf[0], '{');
    f = fopen(tr, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
    snprintf(args, sizeof args, "run %s --config spyre-4core --no-values --check", elf);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 2);
    snprintf(args, sizeof args, "run %s --config spyre-4core --no-values", elf);
    CU_ASSERT_EQUAL(tu_spyre(args, out, sizeof out), 0);
    remove(elf);
    remove(js);
    remove(tr);
}

static void test_info_and_dis_describe_a_generated_program(void)
{
    char elf[512], s[512], elf2[512];
    tu_tmpfile(".elf", elf, sizeof elf);
    tu_tmpfile(".s", s, sizeof s);
    tu_tmpfile(".elf", elf2, sizeof elf2);
    CU_ASSERT_EQUAL_FATAL(spyref("gen gemm 100 70 130 -o %s --config spyre-4core%s", elf, ""), 0);
    CU_ASSERT_EQUAL(spyref("info %s%s", elf, ""), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "100x130"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "instructions per core"));
    CU_ASSERT_EQUAL(spyref("dis %s%s", elf, ""), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "pt.mm"));
    write_file(s, out);
    CU_ASSERT_EQUAL(spyref("as %s -o %s", s, elf2), 0);
    CU_ASSERT_EQUAL(spyref("run %s --check --config spyre-4core%s", elf2, ""), 0);
    remove(elf);
    remove(s);
    remove(elf2);
}

static void test_compile_reports_kernels_and_dumps_passes(void)
{
    CU_ASSERT_EQUAL(tu_spyre("compile " SPYRE_SOURCE_DIR "/traces/mlp", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "graph mlp: 2 kernels"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "aten.gelu.default"));
    CU_ASSERT_EQUAL(tu_spyre("compile " SPYRE_SOURCE_DIR "/traces/mlp/graph.txt --dump-after=lower", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "buffer x: f32[8, 64] input"));
    CU_ASSERT_EQUAL(tu_spyre("compile " SPYRE_SOURCE_DIR "/traces/mlp --dump-after=nosuchpass", out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "fuse_epilogue"));
    CU_ASSERT_EQUAL(tu_spyre("compile --list-passes", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "decompose\nlower\n"));
}

static void test_compile_errors_name_the_graph_line(void)
{
    char g[512];
    tu_tmpfile(".txt", g, sizeof g);
    write_file(g, "input %x: f32[4, 4]\n%y: f32[4, 4] = aten.frobnicate.default(%x)\noutput %y\n");
    CU_ASSERT_EQUAL(spyref("compile %s%s", g, ""), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ":2: the compiler does not lower aten.frobnicate.default"));
    write_file(g, "input %x: f32[4, 4]\n%y: f32[4, 5] = aten.exp.default(%x)\noutput %y\n");
    CU_ASSERT_EQUAL(spyref("compile %s%s", g, ""), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ":2:"));
    write_file(g, "input %x: f32[4, 4]\n%y: f32[4, 4] = aten.exp.default(%z)\noutput %y\n");
    CU_ASSERT_EQUAL(spyref("compile %s%s", g, ""), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "%z is not defined"));
    remove(g);
}

static void test_ref_reproduces_pytorch_on_the_traces(void)
{
    const char *traces[] = {"encoder_small", "bert_handwritten_small", "gpt2_small_block_tiny", "llama_tiny"};
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(spyref("ref " SPYRE_SOURCE_DIR "/traces/%s%s", traces[i], ""), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "ref output0"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, " ok\n"));
    }
    CU_ASSERT_EQUAL(tu_spyre("ref /nonexistent", out, sizeof out), 2);
}

/* A compiled graph's run ends with the kernels that took longest, each
 * with its share of the run; the JSON statistics list every kernel. */
static void test_run_graph_reports_top_kernels(void)
{
    char js[512];
    tu_tmpfile(".json", js, sizeof js);
    CU_ASSERT_EQUAL(spyref("run " SPYRE_SOURCE_DIR "/traces/mlp --check --stats-json %s%s", js, ""), 0);
    const char *top = strstr(out, "top kernels:");
    CU_ASSERT_PTR_NOT_NULL_FATAL(top);
    CU_ASSERT_PTR_NOT_NULL(strstr(top, "k0_addmm_gelu"));
    CU_ASSERT_PTR_NOT_NULL(strstr(top, "k1_addmm"));
    CU_ASSERT_PTR_NOT_NULL(strstr(top, "share="));
    CU_ASSERT_PTR_NOT_NULL(strstr(top, " ok\n")); /* the check lines follow, unchanged */
    FILE *f = fopen(js, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"kernels\": ["));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "{\"name\": \"k0_addmm_gelu\", \"start_cycles\": 0,"));
    remove(js);
}

/* The reroll pass is listed, and --no-reroll turns it off for compile
 * and run alike (the run checks the same either way). */
static void test_compile_and_run_take_no_reroll(void)
{
    CU_ASSERT_EQUAL(tu_spyre("compile --list-passes", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\ncodegen\nreroll\n"));
    CU_ASSERT_EQUAL(tu_spyre("compile " SPYRE_SOURCE_DIR "/traces/llama_tiny --config spyre --report", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nreroll: instructions per kernel"));
    const char *total = strstr(out, "\n  total: ");
    CU_ASSERT(total && strstr(total, " loops, depth ")); /* llama_tiny has loops to roll */
    CU_ASSERT_EQUAL(
        tu_spyre("compile " SPYRE_SOURCE_DIR "/traces/llama_tiny --config spyre --report --no-reroll", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nreroll (off: --no-reroll): "));
    CU_ASSERT_EQUAL(tu_spyre("run " SPYRE_SOURCE_DIR "/traces/llama_tiny --check --no-reroll", out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " ok\n"));
}

int main(void)
{
    static const tu_test tests[] = {
        {"help_and_usage_errors", test_help_and_usage_errors},
        {"gen_run_check_passes_on_both_configs", test_gen_run_check_passes_on_both_configs},
        {"program_for_32_cores_is_refused_by_a_4_core_chip", test_program_for_32_cores_is_refused_by_a_4_core_chip},
        {"bad_files_exit_2_with_one_line", test_bad_files_exit_2_with_one_line},
        {"rule_breaking_programs_exit_3_naming_core_and_instruction",
         test_rule_breaking_programs_exit_3_naming_core_and_instruction},
        {"a runaway program stops at max_insns or max_cycles with exit 3",
         test_a_runaway_program_stops_at_max_insns_or_max_cycles_with_exit_3},
        {"an invalid config value exits 2 naming file, key and reason",
         test_an_invalid_config_value_exits_2_naming_file_key_and_reason},
        {"wrong_result_exits_1_with_mismatch", test_wrong_result_exits_1_with_mismatch},
        {"stats_json_and_trace_files_are_written", test_stats_json_and_trace_files_are_written},
        {"info_and_dis_describe_a_generated_program", test_info_and_dis_describe_a_generated_program},
        {"compile_reports_kernels_and_dumps_passes", test_compile_reports_kernels_and_dumps_passes},
        {"compile_errors_name_the_graph_line", test_compile_errors_name_the_graph_line},
        {"ref_reproduces_pytorch_on_the_traces", test_ref_reproduces_pytorch_on_the_traces},
        {"run_graph_reports_top_kernels", test_run_graph_reports_top_kernels},
        {"compile_and_run_take_no_reroll", test_compile_and_run_take_no_reroll},
        {NULL, NULL},
    };
    return tu_run("cli", tests);
}
