/* test_elf: the ELF container (write, read, and every way a file can be
 * bad) and the assembler / disassembler. */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isa.h"
#include "testutil.h"

/* ---- helpers ---- */

static void push(isa_program *p, int core, const char *text)
{
    isa_insn in;
    char err[256];
    if (isa_parse_insn(text, &in, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", text, err);
        CU_FAIL_FATAL("bad instruction in a test program");
    }
    isa_stream_push(&p->cores[core], &in);
}

/* Four cores (one of them idle), four tensors of different kinds (every host dtype), constant
 * data for the weight, graph text, and four kernels (two back to back on
 * core 0, instructions outside every kernel on cores 0 and 2). */
static isa_program *sample_program(void)
{
    isa_program *p = isa_program_new(4);
    snprintf(p->config, sizeof p->config, "spyre-4core");
    p->lx_bytes = 2097152;
    int64_t xs[2] = {64, 100}, ws[2] = {100, 64}, ys[2] = {64, 64}, ss[3] = {2, 3, 70};
    isa_program_add_tensor(p, "x", ISA_ROLE_INPUT, ISA_HT_F32, ISA_T_DL16, 2, xs, 0);
    int w = isa_program_add_tensor(p, "w", ISA_ROLE_WEIGHT, ISA_HT_F16, ISA_T_DL16, 2, ws, 16384);
    isa_program_add_tensor(p, "y", ISA_ROLE_OUTPUT, ISA_HT_F32, ISA_T_F32, 2, ys, 32768);
    int s = isa_program_add_tensor(p, "scratch.0", ISA_ROLE_SCRATCH, ISA_HT_BF16, ISA_T_DL16, 3, ss, 65536);
    p->tensors[s].stick_dim = 1; /* sticked on the middle dimension */
    p->tensors[s].bytes = isa_tensor_device_bytes(&p->tensors[s], p->stick_bytes);
    p->dram_bytes = 1 << 20;
    p->nconsts = p->tensors[w].bytes + 256;
    p->consts = malloc(p->nconsts);
    for (size_t i = 0; i < p->nconsts; i++)
        p->consts[i] = (uint8_t)(i * 7 + 3);
    p->tensors[w].const_off = 256;
    const char *graph = "x = input f32[64,100]\nw = weight f16[100,64]\ny = matmul(x, w) ; # kept verbatim\n";
    p->graph = malloc(strlen(graph) + 1);
    strcpy(p->graph, graph);

    push(p, 0, "li r=1 v=4096");
    push(p, 0, "dma.ld d=0x0 a=r1+0x0 run=2 n0=64 ds0=256 as0=256");
    push(p, 0, "sig u=dmai t=0");
    push(p, 0, "wait u=sfp0 t=0");
    push(p, 0, "sfp.exp c=0 d=0x8000 a=0x0 n0=128 ds0=128 as0=128");
    push(p, 0, "sig u=sfp0 t=1");
    push(p, 0, "wait u=dmao t=1");
    push(p, 0, "dma.st d=0x8000 a=0x8000 run=64");
    push(p, 0, "halt");
    push(p, 2, "loop n=4");
    push(p, 2, "addi r=2 v=-128");
    push(p, 2, "dma.lx d=r2+0x100 a=0x0");
    push(p, 2, "endl");
    push(p, 2, "bar");
    push(p, 2, "halt");
    push(p, 3, "pt.mm c=1 f=acc|f32 d=0x1000 p=0x1000 a=0x0 b=0x800 m=8 n=64 k=64");
    push(p, 3, "sfp.add t=f32 bm=imm imm=0.5 d=0x0 a=0x0");
    push(p, 3, "ring.red core=1 tok=3 t=f32 d=0x0 a=0x1000 run=4");
    push(p, 3, "halt");
    isa_program_add_kernel(p, "load", 0, 0, 2);
    isa_program_add_kernel(p, "exp_store", 0, 3, 7);
    isa_program_add_kernel(p, "copy", 2, 0, 3);
    isa_program_add_kernel(p, "mm", 3, 0, 2);
    return p;
}

static void assert_programs_equal(const isa_program *a, const isa_program *b)
{
    CU_ASSERT_STRING_EQUAL(a->config, b->config);
    CU_ASSERT_EQUAL(a->ncores, b->ncores);
    CU_ASSERT_EQUAL(a->lx_bytes, b->lx_bytes);
    CU_ASSERT_EQUAL(a->stick_bytes, b->stick_bytes);
    CU_ASSERT_EQUAL(a->dram_bytes, b->dram_bytes);
    CU_ASSERT_EQUAL(a->weight_bytes, b->weight_bytes);
    CU_ASSERT_EQUAL_FATAL(a->ntensors, b->ntensors);
    for (size_t i = 0; i < a->ntensors; i++) {
        const isa_tensor *x = &a->tensors[i], *y = &b->tensors[i];
        CU_ASSERT_STRING_EQUAL(x->name, y->name);
        CU_ASSERT_EQUAL(x->role, y->role);
        CU_ASSERT_EQUAL(x->host_dtype, y->host_dtype);
        CU_ASSERT_EQUAL(x->dev_dtype, y->dev_dtype);
        CU_ASSERT_EQUAL(x->rank, y->rank);
        for (int d = 0; d < ISA_MAX_RANK; d++)
            CU_ASSERT_EQUAL(x->shape[d], y->shape[d]);
        CU_ASSERT_EQUAL(x->stick_dim, y->stick_dim);
        CU_ASSERT_EQUAL(x->order, y->order);
        CU_ASSERT_EQUAL(x->flags, y->flags);
        CU_ASSERT_EQUAL(x->nan_axis, y->nan_axis);
        CU_ASSERT_EQUAL(x->dram_off, y->dram_off);
        CU_ASSERT_EQUAL(x->bytes, y->bytes);
        CU_ASSERT_EQUAL(x->const_off, y->const_off);
    }
    CU_ASSERT_EQUAL_FATAL(a->nconsts, b->nconsts);
    if (a->nconsts)
        CU_ASSERT_EQUAL(memcmp(a->consts, b->consts, a->nconsts), 0);
    CU_ASSERT_EQUAL(!a->graph, !b->graph);
    if (a->graph && b->graph)
        CU_ASSERT_STRING_EQUAL(a->graph, b->graph);
    CU_ASSERT_EQUAL_FATAL(a->nkernels, b->nkernels);
    for (size_t i = 0; i < a->nkernels; i++) {
        CU_ASSERT_STRING_EQUAL(a->kernels[i].name, b->kernels[i].name);
        CU_ASSERT_EQUAL(a->kernels[i].core, b->kernels[i].core);
    }
    if (a->ncores == b->ncores)
        tu_assert_same_code(a, b, 1);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    uint8_t *buf = (uint8_t *)tu_read_file(path, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    return buf;
}

/* src assembled under name, asserting it assembles (the message and the
 * text on stderr if not). */
static isa_program *assemble_ok(const char *src, const char *name)
{
    char err[512] = "";
    isa_program *p = isa_assemble(src, name, err, sizeof err);
    if (!p)
        fprintf(stderr, "%s\n---\n%s", err, src);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    return p;
}

/* p written to an ELF file and read back, asserting both work. */
static isa_program *through_elf(const isa_program *p)
{
    char path[1024], err[512] = "";
    tu_tmpfile(".elf", path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(isa_elf_write(p, path, err, sizeof err), 0);
    isa_program *r = isa_elf_read(path, err, sizeof err);
    remove(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    return r;
}

/* q, assembled from text, disassembles to text again, and reads back
 * from ELF as want. */
static void expect_text_and_elf_agree(const isa_program *want, const isa_program *q, const char *text)
{
    char *again = isa_disassemble(q);
    CU_ASSERT_STRING_EQUAL(text, again);
    free(again);
    isa_program *r = through_elf(q);
    assert_programs_equal(want, r);
    isa_program_free(r);
}

/* text, p's disassembly, assembles (as name) to p, and p reads back from
 * ELF as p. */
static void expect_round_trips(const isa_program *p, const char *text, const char *name)
{
    isa_program *q = assemble_ok(text, name);
    assert_programs_equal(p, q);
    isa_program *r = through_elf(p);
    assert_programs_equal(p, r);
    isa_program_free(q);
    isa_program_free(r);
}

/* Write the sample program to a fresh file; returns its bytes. */
static uint8_t *good_elf(char *path, size_t pathlen, size_t *n)
{
    char err[512];
    tu_tmpfile(".elf", path, pathlen);
    isa_program *p = sample_program();
    int rc = isa_elf_write(p, path, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    isa_program_free(p);
    return slurp(path, n);
}

typedef struct {
    size_t index, offset, size, shdr; /* shdr: file offset of its section header */
    unsigned flags, type;
} section;

/* Find a section of an ELF image by name, with libelf. */
static int find_section(const uint8_t *img, size_t n, const char *name, section *out)
{
    elf_version(EV_CURRENT);
    char *copy = malloc(n);
    memcpy(copy, img, n);
    Elf *e = elf_memory(copy, n);
    size_t shstrndx;
    int found = 0;
    GElf_Ehdr eh;
    if (e && gelf_getehdr(e, &eh) && elf_getshdrstrndx(e, &shstrndx) == 0)
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
            GElf_Shdr sh;
            gelf_getshdr(scn, &sh);
            const char *s = elf_strptr(e, shstrndx, sh.sh_name);
            if (s && strcmp(s, name) == 0) {
                out->index = elf_ndxscn(scn);
                out->offset = sh.sh_offset;
                out->size = sh.sh_size;
                out->flags = (unsigned)sh.sh_flags;
                out->type = sh.sh_type;
                out->shdr = eh.e_shoff + out->index * eh.e_shentsize;
                found = 1;
            }
        }
    if (e)
        elf_end(e);
    free(copy);
    return found;
}

/* The end of a test on good_elf's image: its file removed, its bytes freed. */
static void drop_image(const char *path, uint8_t *img)
{
    remove(path);
    free(img);
}

/* good_elf, and where its section name lies in it (asserting it is there). */
static uint8_t *good_elf_with(const char *name, section *s, char *path, size_t pathlen, size_t *n)
{
    uint8_t *img = good_elf(path, pathlen, n);
    CU_ASSERT_FATAL(find_section(img, *n, name, s));
    return img;
}

/* Reading path fails: NULL, and one line that starts with the path and
 * contains want. */
static void expect_read_error(const char *path, const char *want)
{
    char err[512] = "";
    isa_program *p = isa_elf_read(path, err, sizeof err);
    CU_ASSERT_PTR_NULL(p);
    isa_program_free(p);
    CU_ASSERT_EQUAL(strncmp(err, path, strlen(path)), 0);
    CU_ASSERT_PTR_NULL(strchr(err, '\n'));
    if (want && !strstr(err, want))
        fprintf(stderr, "expected '%s' in '%s'\n", want, err);
    if (want)
        CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Write bad (size bytes) to a new file and expect reading it to fail
 * with want; frees bad. */
static void expect_bad_image(uint8_t *bad, size_t size, const char *want)
{
    char path[1024];
    tu_write_tmpfile(".elf", bad, size, path, sizeof path);
    expect_read_error(path, want);
    remove(path);
    free(bad);
}

/* Copy good, overwrite n bytes at off with the little-endian v, write it to
 * a new file and expect reading it to fail with want. */
static void expect_patched_error(const uint8_t *good, size_t size, size_t off, uint64_t v, int n, const char *want)
{
    uint8_t *bad = malloc(size);
    memcpy(bad, good, size);
    put_le(bad + off, v, n);
    expect_bad_image(bad, size, want);
}

/* The same with the 64 bytes of the name at off all c: no NUL ends it. */
static void expect_unterminated_name(const uint8_t *good, size_t size, size_t off, char c, const char *want)
{
    uint8_t *bad = malloc(size);
    memcpy(bad, good, size);
    memset(bad + off, c, 64);
    expect_bad_image(bad, size, want);
}

/* Tensor record layout (docs/isa.md): field offsets in a 160-byte record. */
enum { TR_NAME = 0, TR_ROLE = 64, TR_HOST = 68, TR_DEV = 72, TR_RANK = 76, TR_SHAPE = 80, TR_STICK = 128,
       TR_ORDER = 132, TR_DRAM = 136, TR_BYTES = 144, TR_CONST = 152, TR_SIZE = 160 };
/* Kernel record layout (docs/isa.md): field offsets in an 88-byte record. */
enum { KR_NAME = 0, KR_CORE = 64, KR_PAD = 68, KR_FIRST = 72, KR_LAST = 80, KR_SIZE = 88 };

/* ---- the container ---- */

static void test_program_round_trips_through_elf(void)
{
    char path[1024], err[512];
    tu_tmpfile(".elf", path, sizeof path);
    isa_program *p = sample_program();
    CU_ASSERT_EQUAL_FATAL(isa_elf_write(p, path, err, sizeof err), 0);
    isa_program *q = isa_elf_read(path, err, sizeof err);
    if (!q)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    assert_programs_equal(p, q);
    CU_ASSERT_STRING_EQUAL(q->config, "spyre-4core");
    CU_ASSERT_EQUAL(q->ncores, 4);
    CU_ASSERT_EQUAL(q->cores[0].n, 9);
    CU_ASSERT_EQUAL(q->cores[1].n, 0);
    CU_ASSERT_EQUAL(q->cores[3].insns[1].op, ISA_OP_SFP_ADD);
    CU_ASSERT_EQUAL(q->cores[3].insns[1].imm, 0.5f);
    CU_ASSERT_EQUAL(q->tensors[3].stick_dim, 1);
    CU_ASSERT_EQUAL(q->tensors[3].bytes, 2 * 70 * 128); /* 1 stick x (2*70) rows */
    CU_ASSERT_EQUAL(q->tensors[1].const_off, 256);
    CU_ASSERT_EQUAL_FATAL(q->nkernels, 4);
    CU_ASSERT_STRING_EQUAL(q->kernels[1].name, "exp_store");
    CU_ASSERT_EQUAL(q->kernels[1].core, 0);
    CU_ASSERT_EQUAL(q->kernels[1].first, 3);
    CU_ASSERT_EQUAL(q->kernels[1].last, 7);
    CU_ASSERT_EQUAL(q->kernels[3].core, 3);
    isa_program_free(p);
    isa_program_free(q);
    remove(path);
}

static void test_program_without_consts_or_graph_round_trips(void)
{
    char path[1024], err[512];
    tu_tmpfile(".elf", path, sizeof path);
    isa_program *p = isa_program_new(1);
    snprintf(p->config, sizeof p->config, "tiny");
    p->lx_bytes = 4096;
    p->stick_bytes = 256;
    push(p, 0, "halt");
    CU_ASSERT_EQUAL_FATAL(isa_elf_write(p, path, err, sizeof err), 0);
    isa_program *q = isa_elf_read(path, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    assert_programs_equal(p, q);
    CU_ASSERT_PTR_NULL(q->graph);
    CU_ASSERT_PTR_NULL(q->consts);
    CU_ASSERT_EQUAL(q->nkernels, 0);
    size_t n;
    uint8_t *img = slurp(path, &n);
    section none;
    CU_ASSERT_FALSE(find_section(img, n, ".spyre.kernels", &none)); /* no kernels: no section */
    free(img);
    CU_ASSERT_EQUAL(q->stick_bytes, 256);
    isa_program_free(p);
    isa_program_free(q);
    remove(path);
}

/* What readelf shows: sections with the right types and flags, a symbol
 * per tensor and per core stream, the configuration note. */
static void test_elf_sections_and_symbols_describe_the_program(void)
{
    char path[1024];
    size_t n;
    uint8_t *img = good_elf(path, sizeof path, &n);
    section text, tensors, note, cst, graph;
    CU_ASSERT_FATAL(find_section(img, n, ".text.core0", &text));
    CU_ASSERT_EQUAL(text.type, SHT_PROGBITS);
    CU_ASSERT_EQUAL(text.flags, SHF_ALLOC | SHF_EXECINSTR);
    CU_ASSERT_EQUAL(text.size, 9 * ISA_INSN_BYTES);
    CU_ASSERT_EQUAL(img[text.offset], isa_info(ISA_OP_LI)->opcode);
    CU_ASSERT_EQUAL(img[text.offset + 8 * ISA_INSN_BYTES], isa_info(ISA_OP_HALT)->opcode);
    section none;
    CU_ASSERT_FALSE(find_section(img, n, ".text.core1", &none)); /* idle core: no section */
    CU_ASSERT_TRUE(find_section(img, n, ".text.core3", &none));
    CU_ASSERT_FATAL(find_section(img, n, ".spyre.tensors", &tensors));
    CU_ASSERT_EQUAL(tensors.size, 4 * TR_SIZE);
    CU_ASSERT_STRING_EQUAL((const char *)img + tensors.offset + TR_SIZE + TR_NAME, "w");
    CU_ASSERT_EQUAL(img[tensors.offset + TR_SIZE + TR_ROLE], ISA_ROLE_WEIGHT);
    CU_ASSERT_FATAL(find_section(img, n, ".note.spyre", &note));
    CU_ASSERT_EQUAL(note.type, SHT_NOTE);
    CU_ASSERT_EQUAL(memcmp(img + note.offset + 12, "Spyre", 6), 0);
    CU_ASSERT_FATAL(find_section(img, n, ".spyre.const", &cst));
    CU_ASSERT_EQUAL(img[cst.offset + 1], 10);
    CU_ASSERT_FATAL(find_section(img, n, ".spyre.graph", &graph));
    CU_ASSERT_EQUAL(memcmp(img + graph.offset, "x = input", 9), 0);
    section kern;
    CU_ASSERT_FATAL(find_section(img, n, ".spyre.kernels", &kern));
    CU_ASSERT_EQUAL(kern.type, SHT_PROGBITS);
    CU_ASSERT_EQUAL(kern.size, 4 * KR_SIZE);
    const uint8_t *k1 = img + kern.offset + KR_SIZE; /* "exp_store": core 0, [3, 7] */
    CU_ASSERT_STRING_EQUAL((const char *)k1 + KR_NAME, "exp_store");
    CU_ASSERT_EQUAL(k1[KR_CORE], 0);
    CU_ASSERT_EQUAL(k1[KR_FIRST], 3);
    CU_ASSERT_EQUAL(k1[KR_LAST], 7);
    CU_ASSERT_EQUAL(img[kern.offset + 3 * KR_SIZE + KR_CORE], 3);

    /* symbols, through libelf as readelf -s would list them */
    char *copy = malloc(n);
    memcpy(copy, img, n);
    Elf *e = elf_memory(copy, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    GElf_Ehdr eh;
    gelf_getehdr(e, &eh);
    CU_ASSERT_EQUAL(eh.e_ident[EI_CLASS], ELFCLASS64);
    CU_ASSERT_EQUAL(eh.e_ident[EI_DATA], ELFDATA2LSB);
    CU_ASSERT_EQUAL(eh.e_type, ET_EXEC);
    int seen_core0 = 0, seen_core3 = 0, seen_w = 0, nsyms = 0;
    for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
        GElf_Shdr sh;
        gelf_getshdr(scn, &sh);
        if (sh.sh_type != SHT_SYMTAB)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            gelf_getsym(d, (int)i, &sym);
            const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
            nsyms++;
            if (strcmp(name, "core0") == 0) {
                seen_core0 = 1;
                CU_ASSERT_EQUAL(GELF_ST_TYPE(sym.st_info), STT_FUNC);
                CU_ASSERT_EQUAL(sym.st_shndx, text.index);
                CU_ASSERT_EQUAL(sym.st_size, 9 * ISA_INSN_BYTES);
            }
            seen_core3 |= strcmp(name, "core3") == 0;
            if (strcmp(name, "w") == 0) {
                seen_w = 1;
                CU_ASSERT_EQUAL(GELF_ST_TYPE(sym.st_info), STT_OBJECT);
                CU_ASSERT_EQUAL(sym.st_shndx, SHN_ABS);
                CU_ASSERT_EQUAL(sym.st_value, 16384);
                CU_ASSERT_EQUAL(sym.st_size, 100 * 128); /* 64 DL16 lanes: one stick x 100 rows */
            }
        }
    }
    CU_ASSERT(seen_core0 && seen_core3 && seen_w);
    CU_ASSERT_EQUAL(nsyms, 4 + 3); /* 4 tensors, 3 non-empty cores */
    elf_end(e);
    free(copy);
    free(img);
    remove(path);
}

static void test_missing_file_is_an_error(void)
{
    char path[1024];
    tu_tmpfile(".missing", path, sizeof path);
    expect_read_error(path, "cannot open");
}

static void test_text_file_is_not_an_elf(void)
{
    char path[1024];
    tu_tmpfile(".txt", path, sizeof path);
    const char *text = "this is not an ELF file, just some text\n";
    tu_write_file(path, text, strlen(text));
    expect_read_error(path, "not an ELF");
    tu_write_file(path, "", 0);
    expect_read_error(path, "not an ELF");
    remove(path);
}

static void test_foreign_elf_is_not_a_spyre_program(void)
{
    expect_read_error("/bin/true", "not a Spyre program");
}

static void test_truncated_file_is_an_error_at_every_length(void)
{
    char path[1024], cut[1024];
    size_t n;
    uint8_t *img = good_elf(path, sizeof path, &n);
    tu_tmpfile(".cut", cut, sizeof cut);
    for (size_t len = 0; len < n; len += (len < 128 ? 1 : 7)) {
        tu_write_file(cut, img, len);
        expect_read_error(cut, NULL);
    }
    tu_write_file(cut, img, n - 1);
    expect_read_error(cut, "truncated");
    tu_write_file(cut, img, 40);
    expect_read_error(cut, "truncated");
    remove(cut);
    drop_image(path, img);
}

/* A good image (written to path, n bytes, its tensor table *t if t) and
 * the offset of its tensor "w"'s record (2-D, stick dim 1). */
static uint8_t *good_tensors(section *t, char *path, size_t len, size_t *n, size_t *rec1)
{
    section own;
    t = t ? t : &own;
    uint8_t *img = good_elf_with(".spyre.tensors", t, path, len, n);
    *rec1 = t->offset + TR_SIZE;
    return img;
}

static void test_corrupt_tensor_table_is_an_error(void)
{
    char path[1024];
    size_t n, rec1;
    section t;
    uint8_t *img = good_tensors(&t, path, sizeof path, &n, &rec1);
    expect_patched_error(img, n, rec1 + TR_ROLE, 4, 4, "role 4 out of range");
    expect_patched_error(img, n, rec1 + TR_HOST, 3, 4, "host dtype 3 out of range");
    expect_patched_error(img, n, rec1 + TR_DEV, 0x100, 4, "device dtype");
    expect_patched_error(img, n, rec1 + TR_RANK, 7, 4, "rank 7");
    expect_patched_error(img, n, rec1 + TR_RANK, 1, 4, "dimension 1 set past rank");
    expect_patched_error(img, n, rec1 + TR_STICK, 2, 4, "stick dimension");
    expect_patched_error(img, n, rec1 + TR_STICK, 1 | 3 << 8, 4, "LX core 3 without the LX flag");
    expect_patched_error(img, n, rec1 + TR_ORDER, (uint64_t)ISA_TF_LX << 24, 4, "in LX, but not an input");
    expect_patched_error(img, n, rec1 + TR_ORDER, 0x11, 4, "order 0x11 is not an order of its 2 dims");
    expect_patched_error(img, n, rec1 + TR_ORDER, 0x312, 4, "order 0x312 is not an order of its 2 dims");
    expect_patched_error(img, n, rec1 + TR_SHAPE, (uint64_t)-5, 8, "dimension 0 is -5");
    expect_patched_error(img, n, rec1 + TR_SHAPE + 8, 1ull << 40, 8, "larger than the DRAM segment");
    /* beside a 0 any size made no bytes, and dis printed what as refuses (fuzz_elf) */
    expect_patched_error(img, n, rec1 + TR_SHAPE, (1ull << 48) + 1, 8, "outside [0, 2^48]");
    expect_patched_error(img, n, rec1 + TR_DRAM, (1 << 20) - 128, 8, "outside the DRAM segment");
    expect_patched_error(img, n, rec1 + TR_DRAM, (uint64_t)-128, 8, "outside the DRAM segment");
    expect_patched_error(img, n, rec1 + TR_BYTES, 128, 8, "its shape needs");
    expect_patched_error(img, n, rec1 + TR_BYTES, (uint64_t)-1, 8, "outside the DRAM segment");
    expect_patched_error(img, n, rec1 + TR_CONST, 1 << 20, 8, "constant bytes");
    expect_patched_error(img, n, rec1 + TR_CONST, (uint64_t)-2, 8, "constant bytes");
    expect_patched_error(img, n, rec1 + TR_NAME, 'x', 1, "name used twice");
    expect_patched_error(img, n, rec1 + TR_NAME, 0, 1, "empty name");
    expect_patched_error(img, n, rec1 + TR_NAME, ';', 1, "name is not printable ASCII"); /* dis | as */
    expect_patched_error(img, n, rec1 + TR_NAME, '=', 1, "name is not printable ASCII");
    /* a name that fills all 64 bytes has no terminating NUL */
    expect_unterminated_name(img, n, rec1 + TR_NAME, 'A', "not NUL-terminated");
    /* a table whose size is not a whole number of records */
    expect_patched_error(img, n, t.shdr + offsetof(Elf64_Shdr, sh_size), t.size - 1, 8, "not a multiple");
    drop_image(path, img);
}

/* good with order word v written into tensor "w" (2-D, stick dim 1),
 * read back: w's order as the reader keeps it. */
static uint32_t order_read_as(const uint8_t *good, size_t size, size_t off, uint32_t v)
{
    char path[1024], err[512] = "";
    uint8_t *img = malloc(size);
    memcpy(img, good, size);
    put_le(img + off, v, 4);
    tu_write_tmpfile(".elf", img, size, path, sizeof path);
    free(img);
    isa_program *p = isa_elf_read(path, err, sizeof err);
    remove(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int w = isa_program_find_tensor(p, "w");
    CU_ASSERT_FATAL(w >= 0);
    const uint32_t order = p->tensors[w].order;
    isa_program_free(p);
    return order;
}

/* The default order spelled out (stick dim outermost: 0x12 for a 2-D
 * tensor whose stick dim is 1) reads as 0, as the assembler and the
 * writer keep it: its disassembly had said order=1,0, which assembles to
 * order 0 and disassembles without it (found by the elf fuzzer). */
static void test_a_spelled_out_default_order_reads_as_the_default(void)
{
    char path[1024];
    size_t n, rec1;
    uint8_t *img = good_tensors(NULL, path, sizeof path, &n, &rec1);
    CU_ASSERT_EQUAL(img[rec1 + TR_STICK], 1);
    CU_ASSERT_EQUAL(order_read_as(img, n, rec1 + TR_ORDER, 0x12), 0);
    CU_ASSERT_EQUAL(order_read_as(img, n, rec1 + TR_ORDER, 0x21), 0x21); /* another order stays */
    drop_image(path, img);
}

/* Records: 0 load (core 0, [0, 2]), 1 exp_store (core 0, [3, 7]), 2 copy
 * (core 2, [0, 3]), 3 mm (core 3, [0, 2]); core 0 has 9 instructions,
 * core 1 none. */
static void test_corrupt_kernel_records_are_an_error(void)
{
    char path[1024];
    size_t n;
    section k;
    uint8_t *img = good_elf_with(".spyre.kernels", &k, path, sizeof path, &n);
    size_t rec0 = k.offset, rec1 = k.offset + KR_SIZE, rec2 = k.offset + 2 * KR_SIZE, rec3 = k.offset + 3 * KR_SIZE;
    expect_patched_error(img, n, rec2 + KR_CORE, 4, 4, "kernel copy: core 4 out of range [0, 4)");
    expect_patched_error(img, n, rec2 + KR_CORE, 1, 4, "not a range of core 1's 0 instructions");
    expect_patched_error(img, n, rec1 + KR_FIRST, 8, 8, "kernel exp_store: instructions [8, 7]");
    expect_patched_error(img, n, rec1 + KR_LAST, 9, 8, "not a range of core 0's 9 instructions");
    expect_patched_error(img, n, rec3 + KR_FIRST, (uint64_t)-1, 8, "kernel mm: instructions");
    expect_patched_error(img, n, rec1 + KR_FIRST, 2, 8, "overlap kernel load [0, 2] on core 0");
    expect_patched_error(img, n, rec0 + KR_PAD, 1, 4, "kernel load: non-zero padding");
    expect_patched_error(img, n, rec0 + KR_NAME, 0, 1, "kernel 0: empty name");
    /* a name that fills all 64 bytes has no terminating NUL */
    expect_unterminated_name(img, n, rec3 + KR_NAME, 'K', "kernel 3: name is not NUL-terminated");
    expect_patched_error(img, n, k.shdr + offsetof(Elf64_Shdr, sh_size), k.size - 8, 8,
                         ".spyre.kernels: 344 bytes is not a multiple of the 88-byte record");
    drop_image(path, img);

    /* The writer checks the same. */
    char err[512] = "";
    isa_program *p = sample_program();
    tu_tmpfile(".elf", path, sizeof path);
    p->kernels[2].last = 6;
    CU_ASSERT_EQUAL(isa_elf_write(p, path, err, sizeof err), -1);
    TU_ASSERT_CONTAINS(err, "kernel copy: instructions [0, 6] are not a range of core 2's 6 instructions");
    p->kernels[2].last = 3;
    p->kernels[3].core = 7;
    CU_ASSERT_EQUAL(isa_elf_write(p, path, err, sizeof err), -1);
    TU_ASSERT_CONTAINS(err, "kernel mm: core 7 out of range");
    isa_program_free(p);
}

static void test_bad_instruction_is_an_error_naming_core_and_index(void)
{
    char path[1024];
    size_t n;
    section t0, t2;
    uint8_t *img = good_elf_with(".text.core0", &t0, path, sizeof path, &n);
    CU_ASSERT_FATAL(find_section(img, n, ".text.core2", &t2));
    expect_patched_error(img, n, t0.offset + 4 * ISA_INSN_BYTES, 0x0f, 1,
                         "core 0 instruction 4: unknown opcode 0x0f");
    expect_patched_error(img, n, t2.offset + 5 * ISA_INSN_BYTES + 63, 0x80, 1, "core 2 instruction 5:");
    /* dma.lx with run=0: an operand below its minimum */
    expect_patched_error(img, n, t2.offset + 2 * ISA_INSN_BYTES + 12, 0, 1, "core 2 instruction 2:");
    expect_patched_error(img, n, t0.shdr + offsetof(Elf64_Shdr, sh_size), 100, 8, "not a multiple of 64");
    drop_image(path, img);
}

static void test_wrong_elf_header_is_an_error(void)
{
    char path[1024];
    size_t n;
    uint8_t *img = good_elf(path, sizeof path, &n);
    expect_patched_error(img, n, EI_CLASS, ELFCLASS32, 1, "class");
    expect_patched_error(img, n, EI_DATA, ELFDATA2MSB, 1, "little-endian");
    expect_patched_error(img, n, offsetof(Elf64_Ehdr, e_type), ET_REL, 2, "ELF type");
    expect_patched_error(img, n, offsetof(Elf64_Ehdr, e_machine), EM_X86_64, 2, "machine 62");
    expect_patched_error(img, n, offsetof(Elf64_Ehdr, e_shoff), n, 8, "truncated");
    expect_patched_error(img, n, 0, 0, 1, "not an ELF");
    drop_image(path, img);
}

static void test_bad_configuration_note_is_an_error(void)
{
    char path[1024];
    size_t n;
    section note;
    uint8_t *img = good_elf_with(".note.spyre", &note, path, sizeof path, &n);
    expect_patched_error(img, n, note.offset + 12 + 4, 'x', 1, "no \"Spyre\" configuration note");
    expect_patched_error(img, n, note.offset + 4, 200, 4, "runs past the section");
    size_t desc = note.offset + 12 + 8;
    expect_patched_error(img, n, desc + 0, 9, 4, "version 9");
    expect_patched_error(img, n, desc + 4, 0, 4, "ncores 0");
    expect_patched_error(img, n, desc + 4, 1000, 4, "ncores 1000");
    expect_patched_error(img, n, desc + 4, 2, 4, "but the program has 2 cores"); /* core3 exists */
    expect_patched_error(img, n, desc + 8, 6, 4, "stick_bytes 6");
    expect_patched_error(img, n, desc + 8, 2147483776u, 4, "stick_bytes 2147483776 is not a multiple of 4 in [4, 65536]");
    expect_patched_error(img, n, desc + 24, 4096, 8, "DRAM segment"); /* too small for the tensors */
    /* beyond what the assembler accepts, so dis printed what as refused (fuzz_elf) */
    expect_patched_error(img, n, desc + 16, (1ull << 48) + 1, 8, "is outside [1, 2^48]");
    expect_patched_error(img, n, desc + 24, 1ull << 50, 8, "is outside [1, 2^48]");
    /* "spyre-4;ore" was written by dis as the name "spyre-4" and a comment (fuzz_elf) */
    expect_patched_error(img, n, desc + 32 + 1, ';', 1, "configuration name is not printable ASCII");
    expect_patched_error(img, n, desc + 32, 0, 1, "configuration name is not printable ASCII");
    /* "spyre=4core" was read back by as as the key of .config (fuzz_elf, in CI) */
    expect_patched_error(img, n, desc + 32 + 5, '=', 1, "without '#', ';' or '='");
    uint8_t *bad = malloc(n);
    char p2[1024];
    memcpy(bad, img, n);
    memset(bad + desc + 32, 'A', 64);
    tu_write_tmpfile(".elf", bad, n, p2, sizeof p2);
    expect_read_error(p2, "not NUL-terminated");
    remove(p2);
    free(bad);
    drop_image(path, img);
}

/* Flip every byte outside the constant data, one at a time: reading never
 * crashes, and a failure always comes with a message naming the file. */
static void test_any_flipped_byte_is_read_or_reported(void)
{
    char path[1024], bad[1024];
    size_t n;
    section cst;
    uint8_t *img = good_elf_with(".spyre.const", &cst, path, sizeof path, &n);
    tu_tmpfile(".elf", bad, sizeof bad);
    uint8_t *copy = malloc(n);
    int failures = 0, unnamed = 0;
    for (size_t off = 0; off < n; off++) {
        if (off >= cst.offset && off < cst.offset + cst.size)
            continue;
        memcpy(copy, img, n);
        copy[off] ^= 0xff;
        tu_write_file(bad, copy, n);
        char err[512] = "";
        isa_program *p = isa_elf_read(bad, err, sizeof err);
        if (!p) {
            failures++;
            unnamed += strncmp(err, bad, strlen(bad)) != 0 || strchr(err, '\n') != NULL;
        }
        isa_program_free(p);
    }
    CU_ASSERT(failures > 0);
    CU_ASSERT_EQUAL(unnamed, 0);
    remove(bad);
    remove(path);
    free(copy);
    free(img);
}

static void test_write_errors_are_reported(void)
{
    char path[1024], err[512] = "";
    isa_program *p = sample_program();
    CU_ASSERT_EQUAL(isa_elf_write(p, "/nonexistent-dir/x.elf", err, sizeof err), -1);
    CU_ASSERT_EQUAL(strncmp(err, "/nonexistent-dir/x.elf: ", 24), 0);

    tu_tmpfile(".elf", path, sizeof path);
    p->cores[2].insns[1].reg = 0; /* addi r0: r0 is not writable */
    CU_ASSERT_EQUAL(isa_elf_write(p, path, err, sizeof err), -1);
    TU_ASSERT_CONTAINS(err, "core 2 instruction 1: operand r");
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NULL(f); /* no half-written file left behind */
    if (f)
        fclose(f);
    p->cores[2].insns[1].reg = 2;

    p->dram_bytes = 4096;
    CU_ASSERT_EQUAL(isa_elf_write(p, path, err, sizeof err), -1);
    TU_ASSERT_CONTAINS(err, "tensor x: larger than the DRAM segment");
    isa_program_free(p);
}

static void test_a_misnamed_code_section_is_refused(void)
{
    char path[1024], bad[1024];
    size_t n;
    uint8_t *img = good_elf(path, sizeof path, &n);
    /* ".text.core2" -> ".text.corex" in the section name table: that
     * core's code would otherwise be skipped */
    uint8_t *at = NULL;
    for (size_t i = 0; i + 12 <= n && !at; i++)
        if (!memcmp(img + i, ".text.core2", 12))
            at = img + i;
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    at[10] = 'x';
    tu_write_tmpfile(".elf", img, n, bad, sizeof bad);
    expect_read_error(bad, "unknown section .text.corex");
    remove(bad);
    drop_image(path, img);
}

static void test_a_fifo_device_or_directory_is_not_read(void)
{
    char dir[1024], fifo[1100];
    tu_tmpdir(dir, sizeof dir);
    tu_fifo(dir, "prog.elf", fifo, sizeof fifo);
    alarm(10); /* a blocking open would hang: fail instead */
    expect_read_error(fifo, "not a regular file");
    expect_read_error("/dev/zero", "not a regular file");
    expect_read_error(dir, "not a regular file");
    alarm(0);
    tu_rmtree(dir);
}

/* A write that fails part-way (here: the file size limit) leaves the file
 * that was there untouched and no temporary behind.  Before, the writer
 * unlinked the path whatever it was (as root, -o /dev/full removed the
 * device node). */
static void test_a_failed_write_keeps_the_old_file(void)
{
    char dir[1024], path[1100], err[512] = "";
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/prog.elf", dir);
    tu_write_file(path, "old contents", 12);
    isa_program *p = sample_program();
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1000; /* smaller than the program */
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    CU_ASSERT_EQUAL(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = isa_elf_write(p, path, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT_EQUAL(strncmp(err, path, strlen(path)), 0);
    size_t n;
    uint8_t *kept = slurp(path, &n);
    CU_ASSERT_EQUAL(n, 12);
    CU_ASSERT_EQUAL(memcmp(kept, "old contents", 12), 0);
    free(kept);
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    CU_ASSERT_EQUAL(entries, 1); /* no temporary left */
    isa_program_free(p);
    tu_rmtree(dir);
}

/* ---- the assembler ---- */

static const char *tiny_source =
    "# one stick in, exp, one stick out\n"
    ".config spyre-4core ncores=4 lx=2097152\n"
    ".tensor x input f16 1x64\n"
    ".tensor y output f16 1x64   ; placed after x\n"
    ".graph x = input f16[1,64]\n"
    ".graph y = exp(x)\n"
    "\n"
    ".core 0\n"
    "  dma.ld d=0x0 a=0x0        ; LX[0] := DRAM x\n"
    "  sig u=dmai t=0\n"
    "  wait u=sfp0 t=0\n"
    "  sfp.exp d=0x80 a=0x0\n"
    "  sig u=sfp0 t=1\n"
    "  wait u=dmao t=1\n"
    "  dma.st d=0x80 a=0x80      # DRAM y := LX[0x80]\n"
    "  halt\n"
    ".core 1\n"
    "loop n=2\n"
    "li r=1 v=128\n"
    "endl\n"
    "halt";

static void test_assembly_disassembles_and_reassembles_identically(void)
{
    isa_program *p = assemble_ok(tiny_source, "tiny.s");
    CU_ASSERT_STRING_EQUAL(p->config, "spyre-4core");
    CU_ASSERT_EQUAL(p->ncores, 4);
    CU_ASSERT_EQUAL(p->lx_bytes, 2097152);
    CU_ASSERT_EQUAL_FATAL(p->ntensors, 2);
    CU_ASSERT_EQUAL(p->tensors[0].dram_off, 0);
    CU_ASSERT_EQUAL(p->tensors[1].dram_off, 128);
    CU_ASSERT_EQUAL(p->tensors[1].bytes, 128);
    CU_ASSERT_EQUAL(p->tensors[1].role, ISA_ROLE_OUTPUT);
    CU_ASSERT_EQUAL(p->tensors[1].host_dtype, ISA_HT_F16);
    CU_ASSERT_EQUAL(p->tensors[1].dev_dtype, ISA_T_DL16);
    CU_ASSERT_EQUAL(p->dram_bytes, 256);
    CU_ASSERT_STRING_EQUAL(p->graph, "x = input f16[1,64]\ny = exp(x)\n");
    CU_ASSERT_EQUAL_FATAL(p->cores[0].n, 8);
    CU_ASSERT_EQUAL(p->cores[0].insns[3].op, ISA_OP_SFP_EXP);
    CU_ASSERT_EQUAL(p->cores[0].insns[3].d.off, 0x80);
    CU_ASSERT_EQUAL(p->cores[0].insns[4].u, ISA_U_SFP0);
    CU_ASSERT_EQUAL(p->cores[0].insns[4].tok, 1);
    CU_ASSERT_EQUAL(p->cores[1].n, 4);
    CU_ASSERT_EQUAL(p->cores[2].n, 0);

    char *text = isa_disassemble(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    TU_ASSERT_CONTAINS(text, ".core 1\nloop n=2\n  li r=1 v=128\nendl\nhalt\n",
                             ".tensor y output f16 1x64 dev=dl16 at=128\n");
    TU_ASSERT_LACKS(text, ".core 2");
    isa_program *q = assemble_ok(text, "dis.s");
    assert_programs_equal(p, q);
    expect_text_and_elf_agree(p, q, text);
    free(text);
    isa_program_free(p);
    isa_program_free(q);
}

/* A .graph line's trailing carriage returns are all dropped, not one per
 * pass of dis | as, and dis writes none (found by fuzz_asm). */
static void test_graph_lines_lose_every_trailing_carriage_return(void)
{
    isa_program *p = assemble_ok(".graph x = y\r\r\r\n.graph \r\r\n.core 0\nnop\n", "g.s");
    CU_ASSERT_STRING_EQUAL(p->graph, "x = y\n\n");
    free(p->graph);
    p->graph = strdup("a\r\r\nb\n"); /* as an ELF may hold it */
    char *text = isa_disassemble(p);
    TU_ASSERT_CONTAINS(text, "\n.graph a\n.graph b\n");
    free(text);
    isa_program_free(p);
}

static void test_disassembly_of_a_full_program_reassembles(void)
{
    isa_program *p = sample_program();
    char *text = isa_disassemble(p);
    isa_program *q = assemble_ok(text, "sample.s");
    assert_programs_equal(p, q);
    TU_ASSERT_CONTAINS(text, " stick=1",
                             " const=256",
                             "\n.graph y = matmul(x, w) ; # kept verbatim\n",
                             "loop n=4\n  addi r=2 v=-128\n  dma.lx");
    /* kernels back to back, then one ending before the halt */
    TU_ASSERT_CONTAINS(text, ".core 0\n.kernel load\nli r=1 v=4096\n", "\nsig\n.kernel exp_store\nwait u=sfp0\n",
                       "dma.st d=0x8000 a=0x8000 run=64\n.endkernel\nhalt\n", ".core 2\n.kernel copy\nloop n=4\n",
                       "endl\n.endkernel\nbar\nhalt\n");
    free(text);
    isa_program_free(p);
    isa_program_free(q);
}

static const char *kernel_source =
    ".config k ncores=2\n"
    ".core 1\n"
    "  li r=1 v=0              # before any kernel\n"
    ".kernel first\n"
    "  loop n=2\n"
    "    dma.ld d=r1+0x0\n"
    "    addi r=1 v=128\n"
    "  endl\n"
    ".kernel second            ; ends the first\n"
    "  sig u=dmai t=0\n"
    "  wait u=dmai t=0\n"
    ".endkernel\n"
    "  bar\n"
    ".core 0\n"
    ".kernel only\n"
    "  bar\n"
    "  halt                    # the end of the file ends it\n"
    ".core 1\n"
    ".kernel tail              ; a core opened again: its stream goes on at 8\n"
    "  nop\n"
    ".core 1\n"
    "  halt\n";

static void test_kernels_assemble_disassemble_and_reassemble(void)
{
    isa_program *p = assemble_ok(kernel_source, "k.s");
    CU_ASSERT_EQUAL(p->cores[1].n, 10);
    CU_ASSERT_EQUAL_FATAL(p->nkernels, 4);
    const char *names[] = {"first", "second", "only", "tail"};
    const int cores[] = {1, 1, 0, 1};
    const long first[] = {1, 5, 0, 8}, last[] = {4, 6, 1, 8};
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_STRING_EQUAL(p->kernels[i].name, names[i]);
        CU_ASSERT_EQUAL(p->kernels[i].core, cores[i]);
        CU_ASSERT_EQUAL(p->kernels[i].first, first[i]);
        CU_ASSERT_EQUAL(p->kernels[i].last, last[i]);
    }

    char *text = isa_disassemble(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    /* The text lists cores in order, the records are in text order: rec=
     * says where each goes. */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, ".core 0\n.kernel only rec=2\nbar\nhalt\n.core 1\nli r=1\n.kernel first rec=0\n"
                                        "loop n=2\n  dma.ld d=r1+0x0\n  addi r=1 v=128\nendl\n"
                                        ".kernel second rec=1\nsig\nwait\n.endkernel\nbar\n.kernel tail rec=3\nnop\n"
                                        ".endkernel\nhalt\n"));
    isa_program *q = assemble_ok(text, "k-dis.s");
    CU_ASSERT_EQUAL_FATAL(q->nkernels, 4);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_STRING_EQUAL(q->kernels[i].name, names[i]);
        CU_ASSERT_EQUAL(q->kernels[i].first, first[i]);
    }
    expect_text_and_elf_agree(q, q, text); /* and through ELF */
    free(text);
    isa_program_free(p);
    isa_program_free(q);
}

/* A kernel the text cannot express is kept out of .kernel lines, as a comment. */
static void test_disassembly_comments_kernels_it_cannot_express(void)
{
    isa_program *p = sample_program();
    isa_program_add_kernel(p, "inside", 0, 4, 5); /* overlaps exp_store */
    isa_program_add_kernel(p, "far", 3, 2, 10);   /* past core 3's 4 instructions */
    isa_program_add_kernel(p, "two words", 2, 4, 4);
    isa_program_add_kernel(p, "idle", 1, 0, 0);   /* core 1 has no instructions */
    char *text = isa_disassemble(p);
    TU_ASSERT_CONTAINS(text, "# kernel 4 [4, 5] cannot be written as .kernel",
                             "# kernel 5 [2, 10] cannot be written",
                             "# kernel 6 [4, 4] cannot be written",
                             "# kernel 7 [0, 0] is on core 1, which has no instructions");
    isa_program *q = assemble_ok(text, "c.s");
    CU_ASSERT_EQUAL(q->nkernels, 4); /* the sample's own */
    free(text);
    isa_program_free(p);
    isa_program_free(q);
}

static void test_assembler_defaults(void)
{
    char err[512] = "";
    isa_program *p = isa_assemble(".core 31\nhalt\n.tensor a scratch f32 3x40 dev=f32\n.tensor b input f32 scalar\n"
                                  ".tensor c input f32 7 at=4096\n",
                                  "d.s", err, sizeof err);
    if (!p)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(p->config, "spyre");
    CU_ASSERT_EQUAL(p->ncores, 32);
    CU_ASSERT_EQUAL(p->lx_bytes, 2097152);
    CU_ASSERT_EQUAL(p->stick_bytes, 128);
    CU_ASSERT_EQUAL(p->cores[31].n, 1);
    CU_ASSERT_EQUAL(p->tensors[0].bytes, 2 * 3 * 128); /* 40 fp32 = 2 sticks, 3 rows */
    CU_ASSERT_EQUAL(p->tensors[1].rank, 0);
    CU_ASSERT_EQUAL(p->tensors[1].dram_off, 768);
    CU_ASSERT_EQUAL(p->tensors[2].dram_off, 4096);
    CU_ASSERT_EQUAL(p->dram_bytes, 4096 + 128);
    CU_ASSERT_PTR_NULL(p->graph);
    isa_program_free(p);
}

/* Assembling src fails with "FILE:LINE: ..." containing want. */
static void expect_asm_error(const char *src, int line, const char *want)
{
    char err[512] = "", prefix[64];
    isa_program *p = isa_assemble(src, "bad.s", err, sizeof err);
    CU_ASSERT_PTR_NULL(p);
    isa_program_free(p);
    snprintf(prefix, sizeof prefix, "bad.s:%d: ", line);
    if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, want))
        fprintf(stderr, "expected '%s...%s', got '%s'\n", prefix, want, err);
    CU_ASSERT_EQUAL(strncmp(err, prefix, strlen(prefix)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
}

static void test_unknown_instruction_names_file_line_and_mnemonic(void)
{
    expect_asm_error(".core 0\n  nop\n\n  frob d=1   # what is this\n", 4, "unknown instruction 'frob'");
    expect_asm_error(".core 0\ndma.ld run=0\n", 2, "run");
    expect_asm_error(".core 0\ndma.ld d=r16+0\n", 2, "d");
    expect_asm_error("nop\n", 1, "outside a core");
    expect_asm_error(".core 0\nli v=3\n", 2, "operand r must be given"); /* r has no legal default */
}

static void test_bad_directives_are_errors(void)
{
    expect_asm_error(".core 32\n", 1, "32 cores");
    expect_asm_error(".config small ncores=4\n.core 4\n", 2, ".core 4");
    expect_asm_error(".core x\n", 1, "not a number");
    expect_asm_error(".core 0\n.config late\n", 2, "must come before");
    expect_asm_error(".config a\n.config b\n", 2, "twice");
    expect_asm_error(".config a ncores=0\n", 1, "ncores 0");
    expect_asm_error(".config a size=4\n", 1, "no key 'size'");
    expect_asm_error(".config ncores=4\n", 1, "name");
    expect_asm_error("\n.tensor x bogus f32 4x4\n", 2, "unknown role 'bogus'");
    expect_asm_error(".tensor x input f64 4x4\n", 1, "host dtype 'f64'");
    expect_asm_error(".tensor x input f32 4xx4\n", 1, "bad dimensions '4xx4'");
    expect_asm_error(".tensor x input f32 4x-1\n", 1, "bad dimensions");
    expect_asm_error(".tensor x input f32 1x2x3x4x5x6x7\n", 1, "more than 6");
    expect_asm_error(".tensor x input f32 4x4 dev=f16\n", 1, "device dtype 'f16'");
    expect_asm_error(".tensor x input f32 4x4 at=-1\n", 1, "at");
    expect_asm_error(".tensor x input f32 4x4 color=red\n", 1, "no key 'color'");
    expect_asm_error(".tensor x input f32 4x4\n.tensor x output f32 4x4\n", 2, "'x' declared twice");
    expect_asm_error(".tensor x input f32\n", 1, "expected .tensor");
    expect_asm_error(".tensor x input f32 4x4 bytes=16\n", 1, "needs 512");
    expect_asm_error(".dram 100\n.tensor x input f32 4x64\n", 1, "smaller than the 512 bytes");
    expect_asm_error(".dram 100\n.dram 200\n", 2, "twice");
    expect_asm_error(".tensor w weight f32 1x32 const=0\n", 1, "past the 0 .const bytes");
    expect_asm_error(".const abc\n", 1, "odd number");
    expect_asm_error(".const zz\n", 1, "not hex");
    expect_asm_error(".bogus 1\n", 1, "unknown directive '.bogus'");
    expect_asm_error(".kernel k\nnop\n", 1, ".kernel outside a core");
    expect_asm_error(".core 0\n.kernel\n", 2, "expected .kernel NAME");
    expect_asm_error(".core 0\n.kernel a b\n", 2, "expected .kernel NAME");
    expect_asm_error(".core 0\n.kernel "
                     "a234567890123456789012345678901234567890123456789012345678901234\n",
                     2, "longer than 63");
    /* the disassembler could not write these back: found by fuzz_asm */
    expect_asm_error(".core 0\n.kernel k\xe9\nnop\n", 2, "a name is printable ASCII");
    expect_asm_error(".core 0\n.kernel k\rx\nnop\n", 2, "a name is printable ASCII");
    expect_asm_error(".config sp\xe9re\n", 1, ".config: a name is printable ASCII");
    expect_asm_error(".tensor x\xe9 input f32 4x64\n", 1, ".tensor: a name is printable ASCII");
    expect_asm_error(".core 0\nnop\n.kernel empty\n.kernel next\nnop\n", 3, ".kernel empty has no instructions");
    expect_asm_error(".core 0\n.kernel empty\n.core 1\nnop\n", 2, ".kernel empty has no instructions");
    expect_asm_error(".core 0\nnop\n.kernel last\n", 3, ".kernel last has no instructions");
    expect_asm_error(".core 0\n.kernel k\n.endkernel\n", 2, "no instructions");
    expect_asm_error(".core 0\nnop\n.endkernel\n", 3, ".endkernel without an open .kernel");
    expect_asm_error(".core 0\n.kernel k\nnop\n.endkernel x\n", 4, "expected .endkernel alone");
    /* rec= on every .kernel or none, numbering the records 0.. once each */
    expect_asm_error(".core 0\n.kernel a x=1\nnop\n", 2, "expected .kernel NAME [rec=N]");
    expect_asm_error(".core 0\n.kernel a rec=x\nnop\n", 2, ".kernel rec: 'x' is not a number");
    expect_asm_error(".core 0\n.kernel a rec=1\nnop\n.kernel b\nnop\n", 4, "no rec= here but one on line 2");
    expect_asm_error(".core 0\n.kernel a\nnop\n.kernel b rec=0\nnop\n", 4, "rec= here but not on line 2");
    expect_asm_error(".core 0\n.kernel a rec=1\nnop\n.kernel b rec=2\nnop\n", 4, "the program has 2 kernels");
    expect_asm_error(".core 0\n.kernel a rec=0\nnop\n.core 1\n.kernel b rec=0\nnop\n", 5,
                     "another .kernel has that rec=");
}

/* ---- the weights region ---- */

static const char *weights_source =
    ".config spyre-4core ncores=4 lx=262144\n"
    ".weights 8192\n"
    ".tensor x input f32 8x64\n"   /* after the weights region: 8192 */
    ".tensor w weight f32 64x64\n" /* the weights region: 0 */
    ".tensor y output f32 8x64\n"  /* after x: 9216 */
    ".core 0\n"
    "dma.ld d=0x0 a=0x0 run=64\n"
    "halt\n";

static void test_weights_region_assembles_and_round_trips(void)
{
    char err[512] = "", path[1024];
    isa_program *p = assemble_ok(weights_source, "w.s");
    CU_ASSERT_EQUAL(p->weight_bytes, 8192);
    CU_ASSERT_EQUAL(p->tensors[0].dram_off, 8192);
    CU_ASSERT_EQUAL(p->tensors[1].dram_off, 0);
    CU_ASSERT_EQUAL(p->tensors[2].dram_off, 9216);
    CU_ASSERT_EQUAL(p->dram_bytes, 10240);
    char *text = isa_disassemble(p);
    TU_ASSERT_CONTAINS(text, "lx=262144\n.weights 8192\n.tensor x ");
    expect_round_trips(p, text, "w2.s");
    /* A tensor outside its region is refused by the writer too. */
    p->tensors[0].role = ISA_ROLE_WEIGHT;
    tu_tmpfile(".elf", path, sizeof path);
    CU_ASSERT_EQUAL(isa_elf_write(p, path, err, sizeof err), -1);
    TU_ASSERT_CONTAINS(err, "tensor x (weight): bytes [8192, +1024) are not in the weights region");
    free(text);
    isa_program_free(p);
}

/* A tensor with a dimension of 0 has no bytes: it assembles, disassembles
 * and round-trips through ELF like any other. */
static void test_empty_tensor_round_trips(void)
{
    /* any dimension beside a 0 (up to 2^48): empty, as the ELF reader has it (fuzz_elf) */
    const char *src = ".config spyre ncores=1\n.tensor e input f32 64x0\n.tensor z output f32 0x8\n"
                      ".tensor y output f32 4x8\n.tensor big input f32 70368744177764x0\n"
                      ".tensor rows input f32 70368744177764x70368744177764x0\n.core 0\nnop\n";
    isa_program *p = assemble_ok(src, "e.s");
    CU_ASSERT_EQUAL(p->tensors[0].shape[1], 0);
    CU_ASSERT_EQUAL(p->tensors[0].bytes, 0);
    CU_ASSERT_EQUAL(p->tensors[1].bytes, 0);
    CU_ASSERT_EQUAL(p->tensors[2].bytes, 512); /* 4 rows of one stick */
    CU_ASSERT_EQUAL(p->tensors[3].bytes, 0);
    CU_ASSERT_EQUAL(p->tensors[4].bytes, 0); /* its rows multiplied past 2^63 (UBSan, fuzz_elf) */
    CU_ASSERT_EQUAL(isa_tensor_rows(&p->tensors[4]), 0);
    char *text = isa_disassemble(p);
    TU_ASSERT_CONTAINS(text, ".tensor e input f32 64x0");
    expect_round_trips(p, text, "e2.s");
    free(text);
    isa_program_free(p);
}

/* A tensor in another order of its device dims (torch-spyre's 3-D
 * layout: dim 1 outermost, then the sticks of dim 2, then dim 0) places
 * each element there, and keeps its order through dis, as and the ELF;
 * an order that is not each dim once is refused. */
static void test_a_tensor_order_places_elements_and_round_trips(void)
{
    const char *src = ".config spyre ncores=1\n.tensor a input f16 4x64x128 order=1,2,0\n"
                      ".tensor b input f16 4x64x128 order=2,0,1\n"
                      ".tensor c scratch f16 4x64x128 order=1,2,0 value=1\n.core 0\nnop\n";
    isa_program *p = assemble_ok(src, "o.s");
    /* the order and a stepwise check's flag share one word of the ELF record */
    CU_ASSERT_EQUAL(p->tensors[2].order, 0x132);
    CU_ASSERT_EQUAL(p->tensors[2].flags, ISA_TF_VALUE);
    CU_ASSERT_EQUAL(p->tensors[0].order, 0x132); /* 1 + each dim, outermost in the low nibble */
    CU_ASSERT_EQUAL(p->tensors[1].order, 0);     /* the default order is no order */
    CU_ASSERT_EQUAL(p->tensors[0].bytes, 4 * 64 * 2 * 128);
    /* (m, x, o) at x * (2 sticks * 4 * 128) + (o / 64) * (4 * 128) + m * 128 + (o % 64) * 2 */
    int64_t idx[3] = {3, 5, 70};
    CU_ASSERT_EQUAL(isa_layout_offset(&p->tensors[0], 128, idx), 5 * 1024 + 512 + 3 * 128 + 6 * 2);
    static float host[4 * 64 * 128], back[4 * 64 * 128];
    static uint8_t dev[4 * 64 * 2 * 128];
    for (int i = 0; i < 4 * 64 * 128; i++)
        host[i] = (float)(i % 1000) / 8; /* exact in DL16 */
    isa_layout_pack(&p->tensors[0], 128, host, dev);
    uint16_t h;
    memcpy(&h, dev + 5 * 1024 + 512 + 3 * 128 + 6 * 2, 2);
    CU_ASSERT_EQUAL(h, isa_dl16_from_f32(host[(3 * 64 + 5) * 128 + 70]));
    isa_layout_unpack(&p->tensors[0], 128, dev, back);
    CU_ASSERT_EQUAL(memcmp(host, back, sizeof host), 0);
    char *text = isa_disassemble(p);
    TU_ASSERT_CONTAINS(text, ".tensor a input f16 4x64x128 dev=dl16 at=0 order=1,2,0\n");
    TU_ASSERT_LACKS(text, "order=2,0,1");
    TU_ASSERT_CONTAINS(text, " order=1,2,0 value=1\n");
    expect_round_trips(p, text, "o2.s");
    free(text);
    isa_program_free(p);
    expect_asm_error(".config spyre ncores=1\n.tensor a input f16 4x64x128 order=1,1,0\n", 2,
                     "order=1,1,0 is not each of its 3 dims once");
    expect_asm_error(".config spyre ncores=1\n.tensor a input f16 4x64x128 order=1,2\n", 2,
                     "order=1,2 is not each of its 3 dims once");
}

/* A softmax mask's NaN rows (ISA_TF_NANROW) along a host dim, or each
 * element (nanrow=each), keep their axis through dis, as and the ELF; only
 * an input carries them, along one of its dims. */
static void test_a_mask_input_nan_rows_round_trip(void)
{
    const char *src = ".config spyre ncores=1\n.tensor m input f32 2x1x1x16 nanrow=3\n"
                      ".tensor e input f32 4x1 nanrow=each\n.tensor x input f32 4x16\n.core 0\nnop\n";
    isa_program *p = assemble_ok(src, "n.s");
    CU_ASSERT_EQUAL(p->tensors[0].flags, ISA_TF_NANROW);
    CU_ASSERT_EQUAL(p->tensors[0].nan_axis, 3);
    CU_ASSERT_EQUAL(p->tensors[1].flags, ISA_TF_NANROW);
    CU_ASSERT_EQUAL(p->tensors[1].nan_axis, -1);
    CU_ASSERT_EQUAL(p->tensors[2].flags, 0);
    char *text = isa_disassemble(p);
    TU_ASSERT_CONTAINS(text, ".tensor m input f32 2x1x1x16 dev=dl16 at=0 nanrow=3\n");
    TU_ASSERT_CONTAINS(text, " nanrow=each\n");
    expect_round_trips(p, text, "n2.s");
    free(text);
    isa_program_free(p);
    expect_asm_error(".config spyre ncores=1\n.tensor m input f32 4x16 nanrow=2\n", 2, "nanrow");
    expect_asm_error(".config spyre ncores=1\n.tensor m output f32 4x16 nanrow=1\n", 2,
                     "nanrow= is for an input only");
}

/* A weight of gather row numbers wrapped to a table's rows (ISA_TF_WRAP)
 * keeps them through dis, as and the ELF; only a weight carries them. */
static void test_wrapped_row_numbers_round_trip(void)
{
    const char *src = ".config spyre ncores=1\n.weights 4096\n.tensor r weight f32 81 dev=f32 wrap=65535\n"
                      ".tensor x input f32 4x16\n.core 0\nnop\n";
    isa_program *p = assemble_ok(src, "w.s");
    CU_ASSERT_EQUAL(p->tensors[0].flags, ISA_TF_WRAP);
    CU_ASSERT_EQUAL(p->tensors[0].wrap_rows, 65535);
    char *text = isa_disassemble(p);
    TU_ASSERT_CONTAINS(text, " wrap=65535\n");
    expect_round_trips(p, text, "w2.s");
    free(text);
    isa_program_free(p);
    expect_asm_error(".config spyre ncores=1\n.tensor r weight f32 81 wrap=65536\n", 2, "wrap");
    expect_asm_error(".config spyre ncores=1\n.tensor r input f32 81 wrap=25\n", 2, "wrap= is for a weight only");
}

/* A host op's result that host ops read (host=1: ISA_TF_HOST, on a
 * scratch tensor or an output) and one only they read (host=2: also
 * ISA_TF_HOSTONLY, a scratch tensor) keep their marks through dis, as and
 * the ELF, which the runtime reads (docs/runtime.md, "Host fallback"). */
static void test_host_op_results_round_trip(void)
{
    const char *src = ".config spyre ncores=1\n.tensor a scratch f32 4x16 host=1\n.tensor b scratch f32 4x16 host=2\n"
                      ".tensor c output f32 4x16 host=1\n.core 0\nnop\n";
    isa_program *p = assemble_ok(src, "h.s");
    CU_ASSERT_EQUAL(p->tensors[0].flags, ISA_TF_HOST);
    CU_ASSERT_EQUAL(p->tensors[1].flags, ISA_TF_HOST | ISA_TF_HOSTONLY);
    CU_ASSERT_EQUAL(p->tensors[2].flags, ISA_TF_HOST);
    char *text = isa_disassemble(p);
    TU_ASSERT_CONTAINS(text, ".tensor a scratch f32 4x16 dev=dl16 at=0 host=1\n", " host=2\n");
    expect_round_trips(p, text, "h2.s");
    free(text);
    isa_program_free(p);
    expect_asm_error(".config spyre ncores=1\n.tensor c output f32 4x16 host=2\n", 2, "host=2 a scratch tensor");
    expect_asm_error(".config spyre ncores=1\n.tensor w input f32 4x16 host=1\n", 2, "host=1 is for a scratch");
    expect_asm_error(".config spyre ncores=1\n.tensor a scratch f32 4x16 host=3\n", 2, "host");
}

/* A version 1 note (96 bytes, before weights regions) reads as
 * weight_bytes 0; a version 2 note is checked like the rest. */
static void test_version_1_note_reads_without_weights_region(void)
{
    char path[1024];
    size_t n;
    section note;
    uint8_t *img = good_elf_with(".note.spyre", &note, path, sizeof path, &n);
    size_t desc = note.offset + 12 + 8;
    CU_ASSERT_EQUAL(img[desc], 2); /* the format version written today */
    CU_ASSERT_EQUAL(img[note.offset + 4], 104);
    uint8_t *old = malloc(n);
    memcpy(old, img, n);
    put_le(old + desc, 1, 4);
    put_le(old + note.offset + 4, 96, 4);                       /* descsz */
    put_le(old + note.shdr + offsetof(Elf64_Shdr, sh_size), note.size - 8, 8);
    char p1[1024], err[512];
    tu_write_tmpfile(".elf", old, n, p1, sizeof p1);
    isa_program *p = isa_elf_read(p1, err, sizeof err);
    if (!p)
        fprintf(stderr, "%s\n", err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    isa_program *want = sample_program();
    assert_programs_equal(p, want);
    CU_ASSERT_EQUAL(p->weight_bytes, 0);
    /* The sample's input x sits at offset 0: a weights region over it is corrupt. */
    expect_patched_error(img, n, desc + 96, 128, 8, "tensor x (input): bytes [0, +16384) are not in the activation region");
    expect_patched_error(img, n, desc + 96, (1 << 20) + 128, 8, "weights region of 1048704 bytes is larger");
    expect_patched_error(old, n, desc, 3, 4, "version 3 (this reader knows 1 to 2)");
    expect_patched_error(old, n, desc, 2, 4, "description of 96 bytes, expected 104");
    remove(p1);
    remove(path);
    isa_program_free(p);
    isa_program_free(want);
    free(old);
    free(img);
}

static void test_weights_directive_errors(void)
{
    static const struct {
        const char *src;
        int line;
        const char *want;
    } cases[] = {
        {".weights 256\n.tensor w weight f32 4x64\n", 2, "not in the weights region (.weights 256 on line 1"},
        {".tensor x input f32 4x64\n.weights 512\n", 1, "not in the activation region"},
        {".weights 1\n.weights 2\n", 2, ".weights given twice (first on line 1)"},
        {".weights\n", 1, "expected .weights BYTES"},
        {".dram 100\n.weights 512\n", 1, "smaller than the 512 bytes the tensors and .weights need"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_asm_error(cases[i].src, cases[i].line, cases[i].want);
}

int main(void)
{
    static const tu_test tests[] = {
        {"a program round-trips through ELF", test_program_round_trips_through_elf},
        {"a program without constants or graph round-trips", test_program_without_consts_or_graph_round_trips},
        {"ELF sections and symbols describe the program", test_elf_sections_and_symbols_describe_the_program},
        {"a missing file is an error", test_missing_file_is_an_error},
        {"a text file is not an ELF", test_text_file_is_not_an_elf},
        {"a foreign ELF is not a Spyre program", test_foreign_elf_is_not_a_spyre_program},
        {"a truncated file is an error at every length", test_truncated_file_is_an_error_at_every_length},
        {"a corrupt tensor table is an error", test_corrupt_tensor_table_is_an_error},
        {"corrupt kernel records are an error", test_corrupt_kernel_records_are_an_error},
        {"a bad instruction is an error naming core and index",
         test_bad_instruction_is_an_error_naming_core_and_index},
        {"a wrong ELF header is an error", test_wrong_elf_header_is_an_error},
        {"a bad configuration note is an error", test_bad_configuration_note_is_an_error},
        {"any flipped byte is read or reported", test_any_flipped_byte_is_read_or_reported},
        {"write errors are reported", test_write_errors_are_reported},
        {"a misnamed code section is refused", test_a_misnamed_code_section_is_refused},
        {"a FIFO, device or directory is not read", test_a_fifo_device_or_directory_is_not_read},
        {"a failed write keeps the old file", test_a_failed_write_keeps_the_old_file},
        {"assembly disassembles and reassembles identically",
         test_assembly_disassembles_and_reassembles_identically},
        {"the disassembly of a full program reassembles", test_disassembly_of_a_full_program_reassembles},
        {"graph lines lose every trailing carriage return", test_graph_lines_lose_every_trailing_carriage_return},
        {"kernels assemble, disassemble and reassemble", test_kernels_assemble_disassemble_and_reassemble},
        {"the disassembly comments kernels it cannot express", test_disassembly_comments_kernels_it_cannot_express},
        {"assembler defaults: 32 cores, spyre, packed tensors", test_assembler_defaults},
        {"an unknown instruction names file, line and mnemonic",
         test_unknown_instruction_names_file_line_and_mnemonic},
        {"bad directives are errors", test_bad_directives_are_errors},
        {"a weights region assembles and round-trips", test_weights_region_assembles_and_round_trips},
        {"a version 1 note reads without weights region", test_version_1_note_reads_without_weights_region},
        {".weights errors", test_weights_directive_errors},
        {"an empty tensor round-trips", test_empty_tensor_round_trips},
        {"a spelled-out default order reads as the default", test_a_spelled_out_default_order_reads_as_the_default},
        {"a tensor order places elements and round-trips", test_a_tensor_order_places_elements_and_round_trips},
        {"a mask input's NaN rows round-trip", test_a_mask_input_nan_rows_round_trip},
        {"wrapped row numbers round trip", test_wrapped_row_numbers_round_trip},
        {"host op results round trip", test_host_op_results_round_trip},
        {NULL, NULL},
    };
    return tu_run("elf", tests);
}
