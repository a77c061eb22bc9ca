/* test_chip.c: the chip configuration: files, includes, every value's range
 * and the constraints between keys, and docs/chip.md in step with the keys. */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chip.h"
#include "testutil.h"

static chip_config cfg4;


static void test_config_default_has_reference_values(void)
{
    chip_config c;
    tu_config("spyre", &c);
    CU_ASSERT_EQUAL(c.cores, 32);
    CU_ASSERT_EQUAL(c.lx_bytes, 2097152);
    CU_ASSERT_EQUAL(c.lx_usable_bytes, 1625344);
    CU_ASSERT_EQUAL(c.stick_bytes, 128);
    CU_ASSERT_EQUAL(c.dram_bytes, 137438953472ull);
    CU_ASSERT_STRING_EQUAL(c.name, "spyre");
}

static void test_config_4core_overrides_included_file(void)
{
    CU_ASSERT_EQUAL(cfg4.cores, 4);
    CU_ASSERT_EQUAL(cfg4.lx_bytes, 262144);
    CU_ASSERT_EQUAL(cfg4.pt_rows, 8); /* inherited from spyre.cfg */
    CU_ASSERT_STRING_EQUAL(cfg4.name, "spyre-4core");
}

static int load_text(const char *text, char *err, size_t len)
{
    char path[512];
    tu_tmpfile(".cfg", path, sizeof path);
    FILE *f = fopen(path, "w");
    fprintf(f, "include = %s/chip/configs/spyre.cfg\n%s", SPYRE_SOURCE_DIR, text);
    fclose(f);
    chip_config c;
    int rc = chip_config_load(path, &c, err, len);
    remove(path);
    return rc;
}

static void test_config_rejects_bad_values_with_line(void)
{
    char err[512];
    CU_ASSERT_EQUAL(load_text("cores = 0\n", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ":2: cores = 0: must be an integer in [1, 256]"));
    CU_ASSERT_EQUAL(load_text("clock_ghz = fast\n", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "clock_ghz"));
    CU_ASSERT_EQUAL(load_text("lx_bytes = -5\n", err, sizeof err), -1);
    CU_ASSERT_EQUAL(load_text("warp_drive = 1\n", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown key 'warp_drive'"));
    CU_ASSERT_EQUAL(load_text("cores\n", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "expected 'key = value'"));
    CU_ASSERT_EQUAL(load_text("lx_usable_bytes = 4194304\n", err, sizeof err), -1);
    CU_ASSERT_EQUAL(load_text("cores = 8\n", err, sizeof err), 0);
    /* the name is written into every program: as and the ELF reader must read it back */
    CU_ASSERT_EQUAL(load_text("name = a=b\n", err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ":2: name 'a=b': at most 63 printable characters"));
    CU_ASSERT_EQUAL(load_text("name = my chip\n", err, sizeof err), -1);
    CU_ASSERT_EQUAL(load_text("name = x;y\n", err, sizeof err), -1);
    char longname[100] = "name = ";
    memset(longname + 7, 'n', 64);
    strcpy(longname + 71, "\n");
    CU_ASSERT_EQUAL(load_text(longname, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "at most 63"));
}

static void test_config_reports_missing_key_and_file(void)
{
    char path[512], err[512];
    tu_tmpfile(".cfg", path, sizeof path);
    FILE *f = fopen(path, "w");
    fprintf(f, "name = x\ncores = 4\n");
    fclose(f);
    chip_config c;
    CU_ASSERT_EQUAL(chip_config_load(path, &c, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "missing key"));
    remove(path);
    CU_ASSERT_EQUAL(chip_config_load("/nonexistent/x.cfg", &c, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot open"));
}

/* Lines were read in 1,023-byte pieces: the tail of a long comment was
 * parsed as a key. */
static void test_config_lines_of_any_length(void)
{
    size_t n = 5000;
    char *text = malloc(n + 64);
    strcpy(text, "# ");
    memset(text + 2, 'x', n);
    strcpy(text + 2 + n - 20, " cores = 7 comment\ncores = 8\n");
    char err[512];
    CU_ASSERT_EQUAL(load_text(text, err, sizeof err), 0);
    chip_config c;
    char path[512];
    tu_tmpfile(".cfg", path, sizeof path);
    FILE *f = fopen(path, "w");
    fprintf(f, "include = %s/chip/configs/spyre.cfg\n%s", SPYRE_SOURCE_DIR, text);
    fclose(f);
    CU_ASSERT_EQUAL(chip_config_load(path, &c, err, sizeof err), 0);
    CU_ASSERT_EQUAL(c.cores, 8);
    remove(path);
    free(text);
}

/* A NUL byte cut a value short; now it is an error naming the line. */
static void test_config_nul_byte_is_an_error_naming_the_line(void)
{
    char path[512], err[512], want[600];
    tu_write_tmpfile(".cfg", "name = x\ncores = 4\0 # hidden\n", 29, path, sizeof path);
    chip_config c;
    CU_ASSERT_EQUAL(chip_config_load(path, &c, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:2: a NUL byte in the text", path);
    CU_ASSERT_STRING_EQUAL(err, want);
    remove(path);
}

static void test_config_include_of_a_fifo_or_directory_is_refused(void)
{
    char dir[1024], path[1100], fifo[1100], err[1200];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/x.cfg", dir);
    tu_fifo(dir, "fifo.cfg", fifo, sizeof fifo);
    tu_write_file(path, "include = fifo.cfg\n", 19);
    chip_config c;
    alarm(10); /* a blocking open would hang: fail instead */
    CU_ASSERT_EQUAL(chip_config_load(path, &c, err, sizeof err), -1);
    alarm(0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "fifo.cfg: not a regular file"));
    tu_write_file(path, "include = /dev/zero\n", 20);
    CU_ASSERT_EQUAL(chip_config_load(path, &c, err, sizeof err), -1);
    CU_ASSERT_STRING_EQUAL(err, "/dev/zero: not a regular file");
    CU_ASSERT_EQUAL(chip_config_load(dir, &c, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ": not a regular file"));
    tu_rmtree(dir);
}

static void test_config_over_its_cap_is_refused(void)
{
    char path[512], err[512];
    tu_tmpfile(".cfg", path, sizeof path);
    size_t n = ISA_CONFIG_MAX + 1;
    char *text = malloc(n);
    memset(text, '\n', n);
    tu_write_file(path, text, n);
    chip_config c;
    CU_ASSERT_EQUAL(chip_config_load(path, &c, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "more than the 1048576"));
    remove(path);
    free(text);
}

/* Includes and configuration paths had 1,024-byte buffers. */
static void test_config_include_by_a_long_path(void)
{
    char dir[1024], err[4096];
    tu_tmpdir(dir, sizeof dir);
    char *deep = tu_long_dir(dir, 1200);
    char *inner = isa_path_join(deep, "inner.cfg"), *outer = isa_path_join(deep, "outer.cfg");
    char text[600];
    int n = snprintf(text, sizeof text, "include = %s/chip/configs/spyre.cfg\ncores = 6\n", SPYRE_SOURCE_DIR);
    tu_write_file(inner, text, (size_t)n);
    tu_write_file(outer, "include = inner.cfg\nname = deep\n", 32);
    chip_config c;
    int rc = chip_config_load(outer, &c, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(c.cores, 6);
    CU_ASSERT_STRING_EQUAL(c.name, "deep");
    CU_ASSERT(strlen(outer) > 1100);
    free(inner);
    free(outer);
    free(deep);
    tu_rmtree(dir);
}

/* Every invalid value is refused by the loader with one line naming the
 * key, its value and the reason (before this, nine DRAM settings passed it
 * and failed later as "out of host memory creating the simulated chip"). */
static void test_config_rejects_each_invalid_setting_naming_the_key(void)
{
    static const struct {
        const char *lines;  /* appended after "include = spyre.cfg" */
        const char *expect; /* in the message */
    } bad[] = {
        {"dram_burst_bytes = 3\n", "dram_burst_bytes = 3: must be a power of two"},
        {"dram_burst_bytes = 4096\n", "dram_row_bytes = 2048: must be a whole number of bursts"},
        {"dram_row_bytes = 2000\n", "dram_row_bytes = 2000: must be a whole number of bursts"},
        {"dram_interleave_bytes = 48\n", "dram_interleave_bytes = 48: must be a whole number of bursts"},
        {"dram_write_buffer_bytes = 100\n", "dram_write_buffer_bytes = 100: must be 0"},
        {"dram_write_buffer_bytes = 1024\n", "dram_write_buffer_bytes = 1024: must be 0 (writes not posted) or hold"},
        {"dram_write_buffer_bytes = 1073741824\n", "dram_write_buffer_bytes = 1073741824: must be a number in [0, "},
        {"dram_write_low_pct = 90\n", "dram_write_low_pct = 90: must not exceed dram_write_high_pct"},
        {"dram_write_high_pct = 10\n", "dram_write_low_pct = 50: must not exceed dram_write_high_pct"},
        {"dram_trefi_ns = 1\n", "dram_trefi_ns = 1: must exceed dram_trfc_ns"},
        {"dram_trfc_ns = 5000\n", "dram_trefi_ns = 3906: must exceed dram_trfc_ns"},
        {"dram_cl = 4000\n", "dram_trefi_ns = 3906: must exceed"},
        {"dram_channels = 65\n", "dram_channels = 65: must be an integer in [1, 64]"},
        {"dram_tck_ns = 0\n", "dram_tck_ns = 0: must be a number in"},
        {"dram_page_bytes = 12288\n", "dram_page_bytes = 12288: must be a power of two"},
        {"dram_page_bytes = 4096\ndram_bytes = 1099511627776\n", "dram_bytes = 1099511627776: needs more than 2^24 pages"},
        {"dram_align = 384\n", "dram_align = 384: must be a power of two"},
        {"dram_bytes = 1048576\ndram_align = 2097152\n", "dram_bytes = 1048576: must be at least dram_align"},
        {"lx_bytes = 2000000\n", "lx_bytes = 2000000: must be a multiple of 16 sticks"},
        {"lx_usable_bytes = 1000\n", "lx_usable_bytes = 1000: must be a whole number of sticks"},
        {"lx_usable_bytes = 4194304\n", "lx_usable_bytes = 4194304: must not exceed lx_bytes"},
        {"ring_dram_ports = 33\n", "ring_dram_ports = 33: must not exceed cores"},
        {"queue_depth = 100000\n", "queue_depth = 100000: must be an integer in [1, 4096]"},
        {"cores = 0\n", "cores = 0: must be an integer in [1, 256]"},
        {"clock_ghz = 0\n", "clock_ghz = 0: must be a number in"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512] = "";
        CU_ASSERT_EQUAL(load_text(bad[i].lines, err, sizeof err), -1);
        if (!strstr(err, bad[i].expect) || !strstr(err, ".cfg:"))
            fprintf(stderr, "\n%s: got '%s', want '%s'\n", bad[i].lines, err, bad[i].expect);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].expect));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, ".cfg:")); /* the file and line that set the key */
        CU_ASSERT_PTR_NULL(strchr(err, '\n'));
    }
}

static void test_every_shipped_config_loads(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/chip/configs", SPYRE_SOURCE_DIR);
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".cfg"))
            continue;
        char path[1024], err[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        chip_config c;
        int rc = chip_config_load(path, &c, err, sizeof err);
        if (rc)
            fprintf(stderr, "\n%s\n", err);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_EQUAL(chip_config_check(&c, err, sizeof err), 0);
        n++;
    }
    closedir(d);
    CU_ASSERT(n >= 3);
}

/* A configuration built in memory is validated the same way. */
static void test_config_check_names_the_key_of_an_in_memory_config(void)
{
    chip_config c;
    char err[512];
    tu_config("spyre", &c);
    c.dram_burst_bytes = 3;
    CU_ASSERT_EQUAL(chip_config_check(&c, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "configuration spyre: dram_burst_bytes = 3: must be a power of two"));
    tu_config("spyre", &c);
    c.pt_rows = 0;
    CU_ASSERT_EQUAL(chip_config_check(&c, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "pt_rows = 0: must be in [1, 1024]"));
    tu_config("spyre", &c);
    c.clock_ghz = NAN;
    CU_ASSERT_EQUAL(chip_config_check(&c, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "clock_ghz = nan"));
}

/* docs/chip.md holds the tables `spyre config --keys` prints, unedited. */
static void test_docs_hold_the_generated_key_tables(void)
{
    char *want = NULL, path[512];
    size_t wlen = 0;
    FILE *m = open_memstream(&want, &wlen);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    chip_config_doc(m);
    fclose(m);
    snprintf(path, sizeof path, "%s/docs/chip.md", SPYRE_SOURCE_DIR);
    char err[256], *doc = isa_text_read(path, 1 << 20, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    const char *open = "<!-- generated by `spyre config --keys`: do not edit -->\n", *close = "<!-- end of generated tables -->";
    char *a = strstr(doc, open), *b = a ? strstr(a, close) : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    a += strlen(open);
    if ((size_t)(b - a) != wlen || memcmp(a, want, wlen))
        fprintf(stderr, "\ndocs/chip.md is out of step with the keys of chip/chip.h: paste `spyre config --keys`\n");
    CU_ASSERT_EQUAL((size_t)(b - a), wlen);
    CU_ASSERT_EQUAL(memcmp(a, want, (size_t)(b - a) < wlen ? (size_t)(b - a) : wlen), 0);
    free(doc);
    free(want);
}

int main(void)
{
    static const tu_test tests[] = {
        {"config_default_has_reference_values", test_config_default_has_reference_values},
        {"config_4core_overrides_included_file", test_config_4core_overrides_included_file},
        {"config lines of any length", test_config_lines_of_any_length},
        {"config: a NUL byte is an error naming the line", test_config_nul_byte_is_an_error_naming_the_line},
        {"config: an include of a FIFO or directory is refused", test_config_include_of_a_fifo_or_directory_is_refused},
        {"config: a file over its cap is refused", test_config_over_its_cap_is_refused},
        {"config: an include by a long path", test_config_include_by_a_long_path},
        {"config_rejects_bad_values_with_line", test_config_rejects_bad_values_with_line},
        {"config_reports_missing_key_and_file", test_config_reports_missing_key_and_file},
        {"config rejects each invalid setting naming the key", test_config_rejects_each_invalid_setting_naming_the_key},
        {"every shipped config loads", test_every_shipped_config_loads},
        {"config check names the key of an in-memory config", test_config_check_names_the_key_of_an_in_memory_config},
        {"docs hold the generated key tables", test_docs_hold_the_generated_key_tables},
        {NULL, NULL},
    };
    tu_config("spyre-4core", &cfg4);
    return tu_run("chip", tests);
}
