/* elf.c: the ELF container of a program (libelf).
 *
 * A 64-bit little-endian ET_EXEC file with e_machine EM_NONE.  Sections:
 *   .text.core<N>   SHT_PROGBITS, AX: core N's stream, 64 bytes per
 *                   instruction (isa_encode); only cores with instructions
 *   .spyre.tensors  SHT_PROGBITS: the tensor table, one TR_SIZE-byte
 *                   little-endian record per tensor (layout: TR_* below)
 *   .spyre.kernels  SHT_PROGBITS: the kernels, one KR_SIZE-byte little-endian
 *                   record each (layout: KR_* below); only when there are
 *                   some (no section: no kernels)
 *   .spyre.const    SHT_PROGBITS: constant data (only when there is some)
 *   .spyre.graph    SHT_PROGBITS: the graph text (only when there is one)
 *   .note.spyre     SHT_NOTE, owner "Spyre", type NOTE_TYPE_CONFIG: the
 *                   chip configuration the program targets (ND_* below)
 *   .symtab/.strtab one STT_OBJECT per tensor (SHN_ABS, value = DRAM
 *                   offset, size = bytes) and one STT_FUNC core<N> per
 *                   non-empty stream, for readelf and friends; the reader
 *                   ignores them
 *   .shstrtab
 * Any other section is refused: one misnamed (".text.corex") would
 * otherwise be skipped and its core's code lost.
 * Every record field is written and read explicitly, little-endian; the
 * reader checks every size, offset, enum and name before trusting it. */
#include "isa.h"
#include "strbuf.h"

#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Tensor record: byte offsets of its fields. */
enum {
    TR_NAME = 0,    /* ISA_NAME_MAX bytes, NUL-terminated, NUL-padded */
    TR_ROLE = 64,   /* u32 isa_role */
    TR_HOST = 68,   /* u32 isa_host_dtype */
    TR_DEV = 72,    /* u32 isa_dtype_dev */
    TR_RANK = 76,   /* u32 0..ISA_MAX_RANK */
    TR_SHAPE = 80,  /* ISA_MAX_RANK x i64, zero past rank */
    TR_STICK = 128, /* u32: bits 0-7 the stick dimension, bits 8-15 the core whose LX holds it
                       (flag ISA_TF_LX; else 0), bits 16-23 1 + nan_axis (flag ISA_TF_NANROW; else 0),
                       bits 16-31 wrap_rows (flag ISA_TF_WRAP) */
    TR_ORDER = 132, /* u32: bits 0-23 the order of the device dims (isa_tensor.order, 0: the default),
                       bits 24-31 isa_tensor.flags (ISA_TF_*) */
    TR_DRAM = 136,  /* u64 offset in the program's DRAM segment */
    TR_BYTES = 144, /* u64 device bytes */
    TR_CONST = 152, /* i64 offset of its initial data in .spyre.const, or -1 */
    TR_SIZE = 160
};

/* Kernel record: byte offsets of its fields. */
enum {
    KR_NAME = 0,    /* ISA_NAME_MAX bytes, NUL-terminated, NUL-padded */
    KR_CORE = 64,   /* u32 core */
    KR_PAD = 68,    /* u32 zero */
    KR_FIRST = 72,  /* u64 index of its first instruction in the core's stream */
    KR_LAST = 80,   /* u64 index of its last instruction */
    KR_SIZE = 88
};

/* Description of the configuration note: byte offsets of its fields.
 * Version 1 ended at ND_SIZE_V1 (read as weight_bytes 0). */
enum {
    ND_VERSION = 0,  /* u32 NOTE_VERSION */
    ND_NCORES = 4,   /* u32 cores (streams) */
    ND_STICK = 8,    /* u32 stick bytes */
    ND_PAD = 12,     /* u32 zero */
    ND_LX = 16,      /* u64 LX bytes per core */
    ND_DRAM = 24,    /* u64 size of the program's DRAM segment */
    ND_NAME = 32,    /* ISA_NAME_MAX bytes: configuration name */
    ND_SIZE_V1 = 96,
    ND_WEIGHTS = 96, /* u64 size of the weights region (version 2) */
    ND_SIZE = 104
};

#define NOTE_OWNER "Spyre"
#define NOTE_TYPE_CONFIG 0x5350u /* "SP"; 1 would read as NT_VERSION in readelf */
#define NOTE_VERSION 2u
#define NOTE_ALIGN 4
#define TEXT_PREFIX ".text.core"
#define MAX_CORES 256 /* the ring's core operand has 8 bits */


static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int mul_ok(uint64_t a, uint64_t b, uint64_t *r)
{
    if (a && b > UINT64_MAX / a)
        return 0;
    *r = a * b;
    return 1;
}

/* ---- checks shared by the writer and the reader ---- */

/* Is the chip configuration part of p sane? */
static int check_config(const isa_program *p, char *msg, size_t len)
{
    if (!memchr(p->config, 0, sizeof p->config)) {
        isa_errf(msg, len, "configuration name is not NUL-terminated");
        return -1;
    }
    if (!isa_config_name_valid(p->config)) { /* dis could not write it back */
        isa_errf(msg, len, "configuration name is not printable ASCII without '#', ';' or '='");
        return -1;
    }
    if (p->ncores < 1 || p->ncores > MAX_CORES) {
        isa_errf(msg, len, "ncores %d out of range [1, %d]", p->ncores, MAX_CORES);
        return -1;
    }
    if (p->stick_bytes < 4 || p->stick_bytes % 4 || p->stick_bytes > ISA_STICK_MAX) { /* as .config takes it */
        isa_errf(msg, len, "stick_bytes %" PRIu32 " is not a multiple of 4 in [4, %u]", p->stick_bytes,
                 ISA_STICK_MAX);
        return -1;
    }
    if (p->lx_bytes == 0 || p->lx_bytes > ISA_BYTES_MAX || p->dram_bytes > ISA_BYTES_MAX) {
        isa_errf(msg, len, "LX of %" PRIu64 " bytes or DRAM segment of %" PRIu64 " bytes is outside [1, 2^48]",
                 p->lx_bytes, p->dram_bytes);
        return -1;
    }
    if (p->weight_bytes > p->dram_bytes) {
        isa_errf(msg, len, "weights region of %" PRIu64 " bytes is larger than the DRAM segment of %" PRIu64 " bytes",
                p->weight_bytes, p->dram_bytes);
        return -1;
    }
    return 0;
}

/* A record's name (what: "tensor" or "kernel", i its index) is
 * NUL-terminated and not empty. */
static int check_name(const char *name, const char *what, size_t i, char *msg, size_t len)
{
    if (!memchr(name, 0, ISA_NAME_MAX))
        return isa_errf(msg, len, "%s %zu: name is not NUL-terminated", what, i);
    if (!name[0])
        return isa_errf(msg, len, "%s %zu: empty name", what, i);
    return 0;
}

/* Is tensor t of p well formed and inside p's DRAM segment and constants? */
static int check_tensor(const isa_program *p, size_t i, char *msg, size_t len)
{
    const isa_tensor *t = &p->tensors[i];
    if (check_name(t->name, "tensor", i, msg, len))
        return -1;
    if (!isa_name_printable(t->name) || strchr(t->name, '=')) { /* as .tensor takes it */
        isa_errf(msg, len, "tensor %zu: name is not printable ASCII without '#', ';' or '='", i);
        return -1;
    }
    if ((unsigned)t->role > ISA_ROLE_SCRATCH) {
        isa_errf(msg, len, "tensor %s: role %d out of range", t->name, (int)t->role);
        return -1;
    }
    if ((unsigned)t->host_dtype >= ISA_HT_COUNT) {
        isa_errf(msg, len, "tensor %s: host dtype %d out of range", t->name, (int)t->host_dtype);
        return -1;
    }
    if ((unsigned)t->dev_dtype > ISA_T_F32) {
        isa_errf(msg, len, "tensor %s: device dtype %d out of range", t->name, (int)t->dev_dtype);
        return -1;
    }
    if (t->rank < 0 || t->rank > ISA_MAX_RANK) {
        isa_errf(msg, len, "tensor %s: rank %d out of range [0, %d]", t->name, t->rank, ISA_MAX_RANK);
        return -1;
    }
    if (t->rank ? t->stick_dim < 0 || t->stick_dim >= t->rank : t->stick_dim != 0) {
        isa_errf(msg, len, "tensor %s: stick dimension %d out of range for rank %d", t->name, t->stick_dim,
                t->rank);
        return -1;
    }
    if ((t->flags & ISA_TF_NANROW) && (t->role != ISA_ROLE_INPUT || t->nan_axis < -1 || t->nan_axis >= t->rank)) {
        isa_errf(msg, len, "tensor %s: NaN rows along dim %d of a %s of rank %d", t->name, t->nan_axis,
                 isa_role_names[t->role], t->rank);
        return -1;
    }
    if ((t->flags & ISA_TF_HOSTONLY) ? t->role != ISA_ROLE_SCRATCH || !(t->flags & ISA_TF_HOST)
                                     : (t->flags & ISA_TF_HOST) && t->role != ISA_ROLE_SCRATCH && t->role != ISA_ROLE_OUTPUT) {
        isa_errf(msg, len, "tensor %s: host=%d on a %s", t->name, t->flags & ISA_TF_HOSTONLY ? 2 : 1,
                 isa_role_names[t->role]);
        return -1;
    }
    if ((t->flags & ISA_TF_WRAP) && (t->role != ISA_ROLE_WEIGHT || (t->flags & ISA_TF_NANROW) || t->wrap_rows < 1 ||
                                     t->wrap_rows > ISA_WRAP_ROWS_MAX)) {
        isa_errf(msg, len, "tensor %s: row numbers wrapped to %lld rows in a %s", t->name, (long long)t->wrap_rows,
                 isa_role_names[t->role]);
        return -1;
    }
    /* Device bytes without overflow: every factor is bounded by the segment (or the LX). */
    int lx = (t->flags & ISA_TF_LX) != 0;
    uint64_t cap = lx ? p->lx_bytes : p->dram_bytes;
    uint64_t need = p->stick_bytes, lanes = p->stick_bytes / (t->dev_dtype == ISA_T_F32 ? 4 : 2);
    for (int d = 0; d < t->rank; d++) {
        if (t->shape[d] < 0 || (uint64_t)t->shape[d] > ISA_BYTES_MAX) { /* as the assembler: even beside a 0 */
            isa_errf(msg, len, "tensor %s: dimension %d is %" PRId64 ", outside [0, 2^48]", t->name, d,
                     t->shape[d]);
            return -1;
        }
        need = t->shape[d] ? need : 0; /* an empty tensor has no bytes */
    }
    for (int d = 0; d < t->rank && need; d++) {
        uint64_t f = (uint64_t)t->shape[d];
        if (d == t->stick_dim)
            f = (f + lanes - 1) / lanes;
        if (!mul_ok(need, f, &need) || need > cap) {
            isa_errf(msg, len, "tensor %s: larger than the %s (%" PRIu64 " bytes)", t->name, lx ? "LX" : "DRAM segment",
                    cap);
            return -1;
        }
    }
    if (t->bytes < need) {
        isa_errf(msg, len, "tensor %s: %" PRIu64 " bytes, but its shape needs %" PRIu64, t->name, t->bytes,
                need);
        return -1;
    }
    if (lx)
        return isa_tensor_check_lx(p, t, msg, len);
    if (t->dram_off > p->dram_bytes || t->bytes > p->dram_bytes - t->dram_off) {
        isa_errf(msg, len,
                "tensor %s: bytes [%" PRIu64 ", +%" PRIu64 ") outside the DRAM segment of %" PRIu64 " bytes",
                t->name, t->dram_off, t->bytes, p->dram_bytes);
        return -1;
    }
    int is_weight = t->role == ISA_ROLE_WEIGHT;
    if (p->weight_bytes && (is_weight ? t->dram_off + t->bytes > p->weight_bytes : t->dram_off < p->weight_bytes)) {
        isa_errf(msg, len,
                "tensor %s (%s): bytes [%" PRIu64 ", +%" PRIu64 ") are not in the %s region (weights: [0, %" PRIu64 "))",
                t->name, isa_role_names[t->role], t->dram_off, t->bytes,
                is_weight ? "weights" : "activation", p->weight_bytes);
        return -1;
    }
    if (t->const_off != -1 &&
        (t->const_off < 0 || (uint64_t)t->const_off > p->nconsts || t->bytes > p->nconsts - (uint64_t)t->const_off)) {
        isa_errf(msg, len, "tensor %s: initial data at %" PRId64 " (+%" PRIu64 ") outside the %zu constant bytes",
                t->name, t->const_off, t->bytes, p->nconsts);
        return -1;
    }
    return 0;
}

/* Is kernel i of p named, inside its core's stream and clear of the
 * kernels before it on that core? */
static int check_kernel(const isa_program *p, size_t i, char *msg, size_t len)
{
    const isa_kernel *k = &p->kernels[i];
    if (check_name(k->name, "kernel", i, msg, len))
        return -1;
    if (k->core < 0 || k->core >= p->ncores) {
        isa_errf(msg, len, "kernel %s: core %d out of range [0, %d)", k->name, k->core, p->ncores);
        return -1;
    }
    size_t n = p->cores[k->core].n;
    if (k->first < 0 || k->first > k->last || (unsigned long)k->last >= n) {
        isa_errf(msg, len, "kernel %s: instructions [%ld, %ld] are not a range of core %d's %zu instructions",
                k->name, k->first, k->last, k->core, n);
        return -1;
    }
    for (size_t j = 0; j < i; j++) {
        const isa_kernel *o = &p->kernels[j];
        if (o->core == k->core && o->first <= k->last && k->first <= o->last) {
            isa_errf(msg, len, "kernel %s: instructions [%ld, %ld] overlap kernel %s [%ld, %ld] on core %d", k->name,
                    k->first, k->last, o->name, o->first, o->last, k->core);
            return -1;
        }
    }
    return 0;
}

/* ---- writing ---- */

/* Append a NUL-terminated string; returns its offset. */
static size_t sb_add(strbuf *s, const char *str)
{
    const size_t off = s->len;
    isa_sb_put(s, str, strlen(str) + 1);
    return off;
}

static Elf_Scn *add_section(Elf *e, size_t name, Elf64_Word type, Elf64_Xword flags, void *buf, size_t size,
                            size_t align, Elf_Type dtype, Elf64_Xword entsize)
{
    Elf_Scn *scn = elf_newscn(e);
    if (!scn)
        return NULL;
    Elf_Data *d = elf_newdata(scn);
    if (!d)
        return NULL;
    d->d_buf = buf;
    d->d_size = size;
    d->d_align = align;
    d->d_type = dtype;
    d->d_off = 0;
    d->d_version = EV_CURRENT;
    Elf64_Shdr *sh = elf64_getshdr(scn);
    if (!sh)
        return NULL;
    sh->sh_name = (Elf64_Word)name;
    sh->sh_type = type;
    sh->sh_flags = flags;
    sh->sh_addralign = align;
    sh->sh_entsize = entsize;
    return scn;
}

static void put_tensor(uint8_t *r, const isa_program *p, size_t i)
{
    const isa_tensor *t = &p->tensors[i];
    memcpy(r + TR_NAME, t->name, strlen(t->name)); /* rest stays NUL */
    put_le(r + TR_ROLE, (uint32_t)t->role, 4);
    put_le(r + TR_HOST, (uint32_t)t->host_dtype, 4);
    put_le(r + TR_DEV, (uint32_t)t->dev_dtype, 4);
    put_le(r + TR_RANK, (uint32_t)t->rank, 4);
    for (int d = 0; d < t->rank; d++)
        put_le(r + TR_SHAPE + 8 * d, (uint64_t)t->shape[d], 8);
    put_le(r + TR_STICK,
           (uint32_t)t->stick_dim | (uint32_t)(t->flags & ISA_TF_LX ? t->lx_core : 0) << 8 |
               (uint32_t)(t->flags & ISA_TF_NANROW ? t->nan_axis + 1 : t->flags & ISA_TF_WRAP ? t->wrap_rows : 0) << 16,
           4);
    put_le(r + TR_ORDER, t->order | t->flags << 24, 4);
    put_le(r + TR_DRAM, t->dram_off, 8);
    put_le(r + TR_BYTES, t->bytes, 8);
    put_le(r + TR_CONST, (uint64_t)t->const_off, 8);
}

static void put_kernel(uint8_t *r, const isa_program *p, size_t i)
{
    const isa_kernel *k = &p->kernels[i];
    memcpy(r + KR_NAME, k->name, strlen(k->name)); /* rest stays NUL */
    put_le(r + KR_CORE, (uint32_t)k->core, 4);
    put_le(r + KR_FIRST, (uint64_t)k->first, 8);
    put_le(r + KR_LAST, (uint64_t)k->last, 8);
}

/* A table of n zeroed rec_size-byte records (at least one), record i
 * written by put; NULL when out of memory. */
static uint8_t *encode_records(const isa_program *p, size_t n, int rec_size,
                               void (*put)(uint8_t *r, const isa_program *p, size_t i))
{
    uint8_t *tab = calloc(n ? n : 1, (size_t)rec_size);
    if (!tab)
        return NULL;
    for (size_t i = 0; i < n; i++)
        put(tab + i * (size_t)rec_size, p, i);
    return tab;
}

/* The configuration note: header, owner padded to 4, description. */
#define NOTE_NAME_PADDED ((sizeof NOTE_OWNER + NOTE_ALIGN - 1) / NOTE_ALIGN * NOTE_ALIGN)
#define NOTE_BYTES (12 + NOTE_NAME_PADDED + ND_SIZE)

static void encode_note(const isa_program *p, uint8_t *n)
{
    memset(n, 0, NOTE_BYTES);
    put_le(n, sizeof NOTE_OWNER, 4);
    put_le(n + 4, ND_SIZE, 4);
    put_le(n + 8, NOTE_TYPE_CONFIG, 4);
    memcpy(n + 12, NOTE_OWNER, sizeof NOTE_OWNER);
    uint8_t *d = n + 12 + NOTE_NAME_PADDED;
    put_le(d + ND_VERSION, NOTE_VERSION, 4);
    put_le(d + ND_NCORES, (uint32_t)p->ncores, 4);
    put_le(d + ND_STICK, p->stick_bytes, 4);
    put_le(d + ND_LX, p->lx_bytes, 8);
    put_le(d + ND_DRAM, p->dram_bytes, 8);
    memcpy(d + ND_NAME, p->config, strlen(p->config));
    put_le(d + ND_WEIGHTS, p->weight_bytes, 8);
}

/* The checks a program passes before it is written. */
static int check_program(const isa_program *p, const char *path, char *err, size_t errlen)
{
    char msg[400];
    if (check_config(p, msg, sizeof msg)) {
        isa_errf(err, errlen, "%s: %s", path, msg);
        return -1;
    }
    for (size_t i = 0; i < p->ntensors; i++)
        if (check_tensor(p, i, msg, sizeof msg)) {
            isa_errf(err, errlen, "%s: %s", path, msg);
            return -1;
        }
    const char *dup = isa_program_duplicate_tensor(p);
    if (dup) {
        isa_errf(err, errlen, "%s: tensor %s: name used twice", path, dup);
        return -1;
    }
    for (size_t i = 0; i < p->nkernels; i++)
        if (check_kernel(p, i, msg, sizeof msg)) {
            isa_errf(err, errlen, "%s: %s", path, msg);
            return -1;
        }
    return 0;
}

/* An ELF file being written: the encoded sections' data, the symbols and
 * the two string tables as they fill. */
typedef struct {
    const isa_program *p;
    Elf *e;
    strbuf shstr, str;
    uint8_t **text; /* per core */
    uint8_t *tensors, *kernels;
    Elf64_Sym *syms;
    size_t nsym;
    uint8_t note[NOTE_BYTES];
} elf_out;

/* Every section's data encoded in memory (the instructions per core). */
static int encode_all(elf_out *o, const char *path, char *err, size_t errlen)
{
    const isa_program *p = o->p;
    char msg[400];
    o->text = calloc((size_t)p->ncores, sizeof *o->text);
    o->tensors = encode_records(p, p->ntensors, TR_SIZE, put_tensor);
    o->kernels = encode_records(p, p->nkernels, KR_SIZE, put_kernel);
    o->syms = calloc(1 + p->ntensors + (size_t)p->ncores, sizeof *o->syms);
    encode_note(p, o->note);
    if (!o->text || !o->tensors || !o->kernels || !o->syms) {
        isa_errf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (int c = 0; c < p->ncores; c++) {
        const isa_stream *s = &p->cores[c];
        if (!s->n)
            continue;
        o->text[c] = malloc(s->n * ISA_INSN_BYTES);
        if (!o->text[c]) {
            isa_errf(err, errlen, "%s: out of memory", path);
            return -1;
        }
        for (size_t i = 0; i < s->n; i++)
            if (isa_encode(&s->insns[i], o->text[c] + i * ISA_INSN_BYTES, msg, sizeof msg)) {
                isa_errf(err, errlen, "%s: core %d instruction %zu: %s", path, c, i, msg);
                return -1;
            }
    }
    return 0;
}

/* A symbol of the table, global. */
static void add_symbol(elf_out *o, const char *name, int type, Elf64_Section shndx, uint64_t value, uint64_t size)
{
    Elf64_Sym *sym = &o->syms[o->nsym++];
    sym->st_name = (Elf64_Word)sb_add(&o->str, name);
    sym->st_info = ELF64_ST_INFO(STB_GLOBAL, type);
    sym->st_other = STV_DEFAULT;
    sym->st_shndx = shndx;
    sym->st_value = value;
    sym->st_size = size;
}

/* A text section and a symbol (coreN) for each core with instructions. */
static int add_texts(elf_out *o)
{
    const isa_program *p = o->p;
    char name[64];
    for (int c = 0; c < p->ncores; c++) {
        const isa_stream *s = &p->cores[c];
        if (!s->n)
            continue;
        snprintf(name, sizeof name, TEXT_PREFIX "%d", c);
        Elf_Scn *scn = add_section(o->e, sb_add(&o->shstr, name), SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
                                   o->text[c], s->n * ISA_INSN_BYTES, ISA_INSN_BYTES, ELF_T_BYTE, ISA_INSN_BYTES);
        if (!scn)
            return -1;
        snprintf(name, sizeof name, "core%d", c);
        add_symbol(o, name, STT_FUNC, (Elf64_Section)elf_ndxscn(scn), 0, s->n * ISA_INSN_BYTES);
    }
    return 0;
}

/* The tensor table (and a symbol per tensor at its DRAM offset), the
 * kernel table, the constants, the graph and the configuration note. */
static int add_tables(elf_out *o)
{
    const isa_program *p = o->p;
    Elf *e = o->e;
    if (!add_section(e, sb_add(&o->shstr, ".spyre.tensors"), SHT_PROGBITS, 0, o->tensors, p->ntensors * TR_SIZE, 8,
                     ELF_T_BYTE, TR_SIZE))
        return -1;
    for (size_t i = 0; i < p->ntensors; i++)
        add_symbol(o, p->tensors[i].name, STT_OBJECT, SHN_ABS, p->tensors[i].dram_off, p->tensors[i].bytes);
    if (p->nkernels && !add_section(e, sb_add(&o->shstr, ".spyre.kernels"), SHT_PROGBITS, 0, o->kernels,
                                    p->nkernels * KR_SIZE, 8, ELF_T_BYTE, KR_SIZE))
        return -1;
    if (p->nconsts && !add_section(e, sb_add(&o->shstr, ".spyre.const"), SHT_PROGBITS, 0, p->consts, p->nconsts, 8,
                                   ELF_T_BYTE, 0))
        return -1;
    if (p->graph && !add_section(e, sb_add(&o->shstr, ".spyre.graph"), SHT_PROGBITS, 0, p->graph,
                                 strlen(p->graph), 1, ELF_T_BYTE, 0))
        return -1;
    if (!add_section(e, sb_add(&o->shstr, ".note.spyre"), SHT_NOTE, 0, o->note, sizeof o->note, NOTE_ALIGN,
                     ELF_T_BYTE, 0))
        return -1;
    return 0;
}

/* The symbol table and the string tables, complete once every name is
 * in; their data pointers are set last because sb_add may move the
 * buffers. */
static int add_symtabs(elf_out *o, Elf64_Ehdr *eh)
{
    Elf *e = o->e;
    Elf_Scn *symscn = add_section(e, sb_add(&o->shstr, ".symtab"), SHT_SYMTAB, 0, o->syms, o->nsym * sizeof *o->syms,
                                  8, ELF_T_SYM, sizeof *o->syms);
    Elf_Scn *strscn = symscn ? add_section(e, sb_add(&o->shstr, ".strtab"), SHT_STRTAB, 0, NULL, 0, 1, ELF_T_BYTE, 0)
                             : NULL;
    Elf_Scn *shscn = strscn ? add_section(e, sb_add(&o->shstr, ".shstrtab"), SHT_STRTAB, 0, NULL, 0, 1, ELF_T_BYTE, 0)
                            : NULL;
    if (!shscn)
        return -1;
    Elf_Data *d = elf_getdata(strscn, NULL);
    d->d_buf = o->str.buf;
    d->d_size = o->str.len;
    d = elf_getdata(shscn, NULL);
    d->d_buf = o->shstr.buf;
    d->d_size = o->shstr.len;
    Elf64_Shdr *symsh = elf64_getshdr(symscn);
    symsh->sh_link = (Elf64_Word)elf_ndxscn(strscn);
    symsh->sh_info = 1; /* every symbol but the null one is global */
    eh->e_shstrndx = (Elf64_Half)elf_ndxscn(shscn);
    return 0;
}

/* The ELF image through libelf into the open file fd. */
static int write_elf(elf_out *o, int fd)
{
    o->e = elf_begin(fd, ELF_C_WRITE, NULL);
    Elf64_Ehdr *eh = o->e ? elf64_newehdr(o->e) : NULL;
    if (!eh)
        return -1;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_OSABI] = ELFOSABI_NONE;
    eh->e_type = ET_EXEC;
    eh->e_machine = EM_NONE;
    eh->e_version = EV_CURRENT;
    sb_add(&o->shstr, "");
    sb_add(&o->str, "");
    o->nsym = 1;
    if (add_texts(o) || add_tables(o) || add_symtabs(o, eh))
        return -1;
    elf_flagehdr(o->e, ELF_C_SET, ELF_F_DIRTY);
    return elf_update(o->e, ELF_C_WRITE) < 0 ? -1 : 0;
}

int isa_elf_write(const isa_program *p, const char *path, char *err, size_t errlen)
{
    if (check_program(p, path, err, errlen))
        return -1;
    int rc = -1, fd = -1;
    isa_outfile of;
    elf_out o = {0};
    o.p = p;
    if (encode_all(&o, path, err, errlen))
        goto out;
    if (elf_version(EV_CURRENT) == EV_NONE) {
        isa_errf(err, errlen, "%s: libelf: %s", path, elf_errmsg(-1));
        goto out;
    }
    if (isa_out_open(&of, path, err, errlen))
        goto out;
    fd = fileno(of.f);
    if (write_elf(&o, fd))
        isa_errf(err, errlen, "%s: libelf: %s", path, elf_errmsg(-1));
    else
        rc = 0;
out:
    if (o.e)
        elf_end(o.e);
    if (fd >= 0 && isa_out_close(&of, rc == 0, err, errlen))
        rc = -1;
    if (o.text)
        for (int c = 0; c < p->ncores; c++)
            free(o.text[c]);
    free(o.text);
    free(o.tensors);
    free(o.kernels);
    free(o.syms);
    free(o.shstr.buf);
    free(o.str.buf);
    return rc;
}

/* ---- reading ---- */

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
} reader;

static void rfail(const reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    isa_errf(r->err, r->errlen, "%s: ", r->path);
    isa_verrf_cat(r->err, r->errlen, fmt, ap);
    va_end(ap);
}

/* A section's bytes inside the file image. */
typedef struct {
    const uint8_t *data;
    size_t size;
    int present;
} blob;

/* The checks libelf does not promise: identity, and that the section
 * header table lies inside the file. */
static int check_header(const reader *r, const uint8_t *buf, size_t size)
{
    if (size < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0) {
        rfail(r, "not an ELF file");
        return -1;
    }
    if (buf[EI_CLASS] != ELFCLASS64) {
        rfail(r, "not a Spyre program: ELF class %d, expected 64-bit", buf[EI_CLASS]);
        return -1;
    }
    if (buf[EI_DATA] != ELFDATA2LSB) {
        rfail(r, "not a Spyre program: not little-endian");
        return -1;
    }
    if (size < sizeof(Elf64_Ehdr)) {
        rfail(r, "truncated: %zu bytes, shorter than an ELF header", size);
        return -1;
    }
    uint64_t shoff = get_le(buf + offsetof(Elf64_Ehdr, e_shoff), 8);
    uint64_t shentsize = get_le(buf + offsetof(Elf64_Ehdr, e_shentsize), 2);
    uint64_t shnum = get_le(buf + offsetof(Elf64_Ehdr, e_shnum), 2);
    if (shnum == 0 || shoff == 0) {
        rfail(r, "not a Spyre program: no section headers");
        return -1;
    }
    if (shentsize != sizeof(Elf64_Shdr)) {
        rfail(r, "corrupt: section header size %" PRIu64, shentsize);
        return -1;
    }
    if (shoff > size || shnum * shentsize > size - shoff) {
        rfail(r, "truncated: section headers end at %" PRIu64 ", file has %zu bytes", shoff + shnum * shentsize,
              size);
        return -1;
    }
    return 0;
}

static int parse_note(const reader *r, blob b, isa_program *cfg)
{
    int found = 0;
    size_t pos = 0;
    while (pos < b.size) {
        if (b.size - pos < 12) {
            rfail(r, "corrupt .note.spyre: truncated note header");
            return -1;
        }
        uint64_t namesz = get_le(b.data + pos, 4), descsz = get_le(b.data + pos + 4, 4);
        uint64_t type = get_le(b.data + pos + 8, 4);
        uint64_t namepad = (namesz + NOTE_ALIGN - 1) / NOTE_ALIGN * NOTE_ALIGN;
        uint64_t descpad = (descsz + NOTE_ALIGN - 1) / NOTE_ALIGN * NOTE_ALIGN;
        pos += 12;
        if (namepad > b.size - pos || descpad > b.size - pos - namepad) {
            rfail(r, "corrupt .note.spyre: note runs past the section");
            return -1;
        }
        const uint8_t *name = b.data + pos, *desc = b.data + pos + namepad;
        pos += namepad + descpad;
        if (namesz != sizeof NOTE_OWNER || memcmp(name, NOTE_OWNER, sizeof NOTE_OWNER) != 0 ||
            type != NOTE_TYPE_CONFIG)
            continue;
        if (found++) {
            rfail(r, "corrupt .note.spyre: two configuration notes");
            return -1;
        }
        uint64_t version = descsz >= 4 ? get_le(desc + ND_VERSION, 4) : 0;
        if (descsz >= 4 && (version < 1 || version > NOTE_VERSION)) {
            rfail(r, "unsupported program format version %" PRIu64 " (this reader knows 1 to %u)", version,
                  NOTE_VERSION);
            return -1;
        }
        uint64_t want = version == 1 ? ND_SIZE_V1 : ND_SIZE;
        if (descsz != want) {
            rfail(r, "corrupt .note.spyre: description of %" PRIu64 " bytes, expected %" PRIu64, descsz, want);
            return -1;
        }
        if (!memchr(desc + ND_NAME, 0, ISA_NAME_MAX)) {
            rfail(r, "corrupt .note.spyre: configuration name is not NUL-terminated");
            return -1;
        }
        memcpy(cfg->config, desc + ND_NAME, ISA_NAME_MAX);
        uint64_t ncores = get_le(desc + ND_NCORES, 4);
        if (ncores > MAX_CORES) {
            rfail(r, "corrupt .note.spyre: ncores %" PRIu64 " out of range [1, %d]", ncores, MAX_CORES);
            return -1;
        }
        cfg->ncores = (int)ncores;
        cfg->stick_bytes = (uint32_t)get_le(desc + ND_STICK, 4);
        cfg->lx_bytes = get_le(desc + ND_LX, 8);
        cfg->dram_bytes = get_le(desc + ND_DRAM, 8);
        cfg->weight_bytes = version >= 2 ? get_le(desc + ND_WEIGHTS, 8) : 0;
    }
    if (!found) {
        rfail(r, "not a Spyre program: no \"" NOTE_OWNER "\" configuration note");
        return -1;
    }
    char msg[300];
    if (check_config(cfg, msg, sizeof msg)) {
        rfail(r, "corrupt .note.spyre: %s", msg);
        return -1;
    }
    return 0;
}

/* A section of fixed-size records: *n records of rec_size bytes each,
 * as a zeroed array of elem-byte entries (at least one); NULL after a
 * message. */
static void *records(const reader *r, blob b, const char *sect, int rec_size, size_t elem, size_t *n)
{
    if (b.size % (size_t)rec_size) {
        rfail(r, "corrupt %s: %zu bytes is not a multiple of the %d-byte record", sect, b.size, rec_size);
        return NULL;
    }
    *n = b.size / (size_t)rec_size;
    void *v = calloc(*n ? *n : 1, elem);
    if (!v)
        rfail(r, "out of memory");
    return v;
}

/* t's order as the writer and the assembler keep it: 0 for the default
 * order even when the file spells it out, so that one layout has one
 * program (the disassembly of a spelled-out default had assembled to 0,
 * another program).  t's stick dim is checked already. */
static uint32_t canonical_order(const isa_tensor *t)
{
    int dims[ISA_MAX_RANK];
    for (int p = 0; p < t->rank; p++)
        dims[p] = (int)((t->order >> (4 * p)) & 15) - 1;
    return t->order ? isa_order_make(dims, t->rank, t->stick_dim) : 0;
}

/* A record's name field into name (ISA_NAME_MAX bytes); -1 after a
 * message naming what and the record's index if it is not NUL-terminated. */
static int record_name(const reader *r, const uint8_t *field, char *name, const char *what, size_t i)
{
    if (!memchr(field, 0, ISA_NAME_MAX)) {
        rfail(r, "corrupt %s %zu: name is not NUL-terminated", what, i);
        return -1;
    }
    memcpy(name, field, ISA_NAME_MAX);
    return 0;
}

static int parse_tensors(const reader *r, blob b, isa_program *p)
{
    size_t n;
    if (!(p->tensors = records(r, b, ".spyre.tensors", TR_SIZE, sizeof *p->tensors, &n)))
        return -1;
    p->tensor_cap = n ? n : 1;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *rec = b.data + i * TR_SIZE;
        isa_tensor *t = &p->tensors[i];
        if (record_name(r, rec + TR_NAME, t->name, ".spyre.tensors: tensor", i))
            return -1;
        uint64_t role = get_le(rec + TR_ROLE, 4), host = get_le(rec + TR_HOST, 4);
        uint64_t dev = get_le(rec + TR_DEV, 4), rank = get_le(rec + TR_RANK, 4);
        uint64_t sword = get_le(rec + TR_STICK, 4), stick = sword & 0xff, core = sword >> 8 & 0xff;
        uint64_t nan1 = sword >> 16;
        if (role > ISA_ROLE_SCRATCH || host >= ISA_HT_COUNT || dev > ISA_T_F32) {
            rfail(r, "corrupt .spyre.tensors: tensor %s: %s %" PRIu64 " out of range", t->name,
                  role > ISA_ROLE_SCRATCH ? "role" : host >= ISA_HT_COUNT ? "host dtype" : "device dtype",
                  role > ISA_ROLE_SCRATCH ? role : host >= ISA_HT_COUNT ? host : dev);
            return -1;
        }
        t->role = (isa_role)role;
        t->host_dtype = (isa_host_dtype)host;
        t->dev_dtype = (isa_dtype_dev)dev;
        if (rank > ISA_MAX_RANK || stick > ISA_MAX_RANK) {
            rfail(r, "corrupt .spyre.tensors: tensor %s: rank %" PRIu64 " / stick dimension %" PRIu64
                     " out of range", t->name, rank, stick);
            return -1;
        }
        t->rank = (int)rank;
        t->stick_dim = (int)stick;
        for (int d = 0; d < ISA_MAX_RANK; d++) {
            int64_t v = (int64_t)get_le(rec + TR_SHAPE + 8 * d, 8);
            if ((uint64_t)d >= rank && v != 0) {
                rfail(r, "corrupt .spyre.tensors: tensor %s: dimension %d set past rank %d", t->name, d, t->rank);
                return -1;
            }
            t->shape[d] = v;
        }
        uint32_t word = (uint32_t)get_le(rec + TR_ORDER, 4);
        t->order = word & 0xffffffu;
        t->flags = word >> 24;
        if (t->flags & ~ISA_TF_ALL) {
            rfail(r, "corrupt .spyre.tensors: tensor %s: unknown flags 0x%x", t->name, (unsigned)t->flags);
            return -1;
        }
        if (!isa_order_valid(t->order, t->rank)) {
            rfail(r, "corrupt .spyre.tensors: tensor %s: order 0x%x is not an order of its %d dims", t->name,
                  (unsigned)t->order, t->rank);
            return -1;
        }
        if (core && !(t->flags & ISA_TF_LX)) {
            rfail(r, "corrupt .spyre.tensors: tensor %s: LX core %" PRIu64 " without the LX flag",
                  t->name, core);
            return -1;
        }
        t->lx_core = (int)core;
        if (nan1 && !(t->flags & (ISA_TF_NANROW | ISA_TF_WRAP))) { /* (its range: check_tensor) */
            rfail(r, "corrupt .spyre.tensors: tensor %s: NaN-row axis %d without its flag", t->name, (int)nan1 - 1);
            return -1;
        }
        t->nan_axis = t->flags & ISA_TF_NANROW ? (int)nan1 - 1 : 0;
        t->wrap_rows = t->flags & ISA_TF_WRAP ? (int64_t)nan1 : 0;
        t->dram_off = get_le(rec + TR_DRAM, 8);
        t->bytes = get_le(rec + TR_BYTES, 8);
        t->const_off = (int64_t)get_le(rec + TR_CONST, 8);
        p->ntensors = i + 1;
        char msg[300];
        if (check_tensor(p, i, msg, sizeof msg)) {
            rfail(r, "corrupt .spyre.tensors: %s", msg);
            return -1;
        }
        t->order = canonical_order(t);
    }
    const char *dup = isa_program_duplicate_tensor(p);
    if (dup) {
        rfail(r, "corrupt .spyre.tensors: tensor %s: name used twice", dup);
        return -1;
    }
    return 0;
}

/* The kernel records; the streams are read already, so every range can
 * be checked against its core's stream. */
static int parse_kernels(const reader *r, blob b, isa_program *p)
{
    size_t n;
    if (!(p->kernels = records(r, b, ".spyre.kernels", KR_SIZE, sizeof *p->kernels, &n)))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *rec = b.data + i * KR_SIZE;
        isa_kernel *k = &p->kernels[i];
        if (record_name(r, rec + KR_NAME, k->name, ".spyre.kernels: kernel", i))
            return -1;
        uint64_t core = get_le(rec + KR_CORE, 4), first = get_le(rec + KR_FIRST, 8), last = get_le(rec + KR_LAST, 8);
        if (get_le(rec + KR_PAD, 4)) {
            rfail(r, "corrupt .spyre.kernels: kernel %s: non-zero padding", k->name);
            return -1;
        }
        if (core >= (uint64_t)p->ncores) {
            rfail(r, "corrupt .spyre.kernels: kernel %s: core %" PRIu64 " out of range [0, %d)", k->name, core,
                  p->ncores);
            return -1;
        }
        /* Beyond any stream: keeps the values representable in a long. */
        if (first > (uint64_t)INT32_MAX || last > (uint64_t)INT32_MAX) {
            rfail(r, "corrupt .spyre.kernels: kernel %s: instructions [%" PRIu64 ", %" PRIu64
                     "] are not a range of core %" PRIu64 "'s %zu instructions",
                  k->name, first, last, core, p->cores[core].n);
            return -1;
        }
        k->core = (int)core;
        k->first = (long)first;
        k->last = (long)last;
        p->nkernels = i + 1;
        char msg[300];
        if (check_kernel(p, i, msg, sizeof msg)) {
            rfail(r, "corrupt .spyre.kernels: %s", msg);
            return -1;
        }
    }
    return 0;
}

/* ".text.core<N>" with N in decimal, no leading zeros; -1 if not such a name. */
static long text_core(const char *name)
{
    size_t k = strlen(TEXT_PREFIX);
    if (strncmp(name, TEXT_PREFIX, k) != 0)
        return -1;
    const char *s = name + k;
    if (!*s || (s[0] == '0' && s[1]) || strspn(s, "0123456789") != strlen(s) || strlen(s) > 6)
        return -1;
    return strtol(s, NULL, 10);
}

static int parse_text(const reader *r, blob b, int core, isa_program *p)
{
    if (b.size % ISA_INSN_BYTES) {
        rfail(r, "corrupt " TEXT_PREFIX "%d: %zu bytes is not a multiple of %d", core, b.size, ISA_INSN_BYTES);
        return -1;
    }
    isa_stream *s = &p->cores[core];
    size_t n = b.size / ISA_INSN_BYTES;
    /* line-aligned: the simulator reads each 128-byte instruction as two
     * cache lines, not three (n instructions are whole lines) */
    s->insns = aligned_alloc(64, (n ? n : 1) * sizeof *s->insns);
    if (!s->insns) {
        rfail(r, "out of memory");
        return -1;
    }
    s->cap = n ? n : 1;
    for (size_t i = 0; i < n; i++) {
        char msg[300];
        if (isa_decode(b.data + i * ISA_INSN_BYTES, &s->insns[i], msg, sizeof msg)) {
            rfail(r, "core %d instruction %zu: %s", core, i, msg);
            return -1;
        }
        s->n = i + 1;
    }
    return 0;
}

/* Sections the reader knows, by name. */
enum { S_TENSORS, S_KERNELS, S_CONST, S_GRAPH, S_NOTE, S_NKNOWN };
static const char *const known_names[S_NKNOWN] = {".spyre.tensors", ".spyre.kernels", ".spyre.const",
                                                  ".spyre.graph", ".note.spyre"};
static const Elf64_Word known_types[S_NKNOWN] = {SHT_PROGBITS, SHT_PROGBITS, SHT_PROGBITS, SHT_PROGBITS, SHT_NOTE};

/* Sections the writer adds for readelf and friends; the reader skips them. */
static int is_table(const char *name)
{
    return !strcmp(name, ".symtab") || !strcmp(name, ".strtab") || !strcmp(name, ".shstrtab");
}

/* The ELF header of a Spyre program, and its section name table. */
static int parse_header(const reader *r, Elf *e, size_t *shstrndx)
{
    GElf_Ehdr eh;
    if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
        rfail(r, "not an ELF file: %s", elf_errmsg(-1));
        return -1;
    }
    if (eh.e_type != ET_EXEC) {
        rfail(r, "not a Spyre program: ELF type %u, expected ET_EXEC", (unsigned)eh.e_type);
        return -1;
    }
    if (eh.e_machine != EM_NONE) {
        rfail(r, "not a Spyre program: machine %u, expected EM_NONE", (unsigned)eh.e_machine);
        return -1;
    }
    if (elf_getshdrstrndx(e, shstrndx)) {
        rfail(r, "corrupt: no section name table: %s", elf_errmsg(-1));
        return -1;
    }
    return 0;
}

/* The sections of the file: each known one (and each core's text) into
 * its slot, once, of its type; the symbol and string tables skipped;
 * anything else refused. */
static int find_sections(const reader *r, Elf *e, const uint8_t *buf, size_t size, size_t shstrndx, blob *known,
                         blob *text)
{
    for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) {
            rfail(r, "corrupt section header: %s", elf_errmsg(-1));
            return -1;
        }
        const char *name = elf_strptr(e, shstrndx, sh.sh_name);
        if (!name) {
            rfail(r, "corrupt: section %zu has no name", elf_ndxscn(scn));
            return -1;
        }
        if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)) {
            rfail(r, "truncated: section %s ends at %" PRIu64 ", file has %zu bytes", name,
                  (uint64_t)(sh.sh_offset + sh.sh_size), size);
            return -1;
        }
        blob b = {buf + sh.sh_offset, (size_t)sh.sh_size, 1};
        blob *slot = NULL;
        Elf64_Word want = SHT_PROGBITS;
        long core = text_core(name);
        if (core >= 0) {
            if (core >= MAX_CORES) {
                rfail(r, "corrupt: section %s: core out of range", name);
                return -1;
            }
            slot = &text[core];
        }
        for (int k = 0; k < S_NKNOWN; k++)
            if (strcmp(name, known_names[k]) == 0) {
                slot = &known[k];
                want = known_types[k];
            }
        if (!slot && !is_table(name)) {
            /* a misnamed code section would drop a core's code */
            rfail(r, "unknown section %s", name);
            return -1;
        }
        if (!slot)
            continue; /* the symbol and string tables, for other tools */
        if (sh.sh_type != want) {
            rfail(r, "corrupt: section %s has type %u, expected %u", name, (unsigned)sh.sh_type, (unsigned)want);
            return -1;
        }
        if (slot->present) {
            rfail(r, "corrupt: section %s appears twice", name);
            return -1;
        }
        *slot = b;
    }
    return 0;
}

/* The sections a program must have, its configuration note into cfg,
 * and no text for a core it does not have. */
static int check_sections(const reader *r, const blob *known, const blob *text, isa_program *cfg)
{
    if (!known[S_NOTE].present) {
        rfail(r, "not a Spyre program: no .note.spyre section");
        return -1;
    }
    if (parse_note(r, known[S_NOTE], cfg))
        return -1;
    if (!known[S_TENSORS].present) {
        rfail(r, "corrupt: no .spyre.tensors section");
        return -1;
    }
    for (int c = cfg->ncores; c < MAX_CORES; c++)
        if (text[c].present) {
            rfail(r, "corrupt: section " TEXT_PREFIX "%d, but the program has %d cores", c, cfg->ncores);
            return -1;
        }
    return 0;
}

/* The constants and the graph's text (no NUL in it), copied. */
static int copy_blobs(const reader *r, const blob *known, isa_program *p)
{
    if (known[S_CONST].present) {
        p->nconsts = known[S_CONST].size;
        p->consts = malloc(p->nconsts ? p->nconsts : 1);
        if (!p->consts) {
            rfail(r, "out of memory");
            return -1;
        }
        memcpy(p->consts, known[S_CONST].data, p->nconsts);
    }
    if (known[S_GRAPH].present) {
        blob g = known[S_GRAPH];
        if (memchr(g.data, 0, g.size)) {
            rfail(r, "corrupt .spyre.graph: the text contains a NUL byte");
            return -1;
        }
        p->graph = malloc(g.size + 1);
        if (!p->graph) {
            rfail(r, "out of memory");
            return -1;
        }
        memcpy(p->graph, g.data, g.size);
        p->graph[g.size] = 0;
    }
    return 0;
}

/* The program of the file: header, sections, configuration, then its
 * constants, graph, tensors, each core's code and the kernels. */
static isa_program *parse(const reader *r, Elf *e, const uint8_t *buf, size_t size)
{
    size_t shstrndx;
    blob known[S_NKNOWN] = {{0}};
    blob text[MAX_CORES] = {{0}};
    isa_program cfg = {0};
    if (parse_header(r, e, &shstrndx) || find_sections(r, e, buf, size, shstrndx, known, text) ||
        check_sections(r, known, text, &cfg))
        return NULL;
    isa_program *p = isa_program_new(cfg.ncores);
    if (!p) {
        rfail(r, "out of memory");
        return NULL;
    }
    memcpy(p->config, cfg.config, sizeof p->config);
    p->lx_bytes = cfg.lx_bytes;
    p->stick_bytes = cfg.stick_bytes;
    p->dram_bytes = cfg.dram_bytes;
    p->weight_bytes = cfg.weight_bytes;
    if (copy_blobs(r, known, p) || parse_tensors(r, known[S_TENSORS], p))
        goto fail;
    for (int c = 0; c < p->ncores; c++)
        if (text[c].present && parse_text(r, text[c], c, p))
            goto fail;
    if (known[S_KERNELS].present && parse_kernels(r, known[S_KERNELS], p))
        goto fail;
    return p;
fail:
    isa_program_free(p);
    return NULL;
}

/* The file mapped, not read: a foreign file of gigabytes is refused by its
 * header at once, and a program costs only the pages its sections occupy.
 * Copy-on-write, as libelf may write to the image it is given. */
static uint8_t *map_file(const char *path, size_t *size, char *err, size_t errlen)
{
    uint64_t n;
    int fd = isa_file_open(path, ISA_ELF_MAX, &n, err, errlen);
    if (fd < 0)
        return NULL;
    void *m = mmap(NULL, n ? (size_t)n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        isa_errf(err, errlen, "%s: cannot map %" PRIu64 " bytes", path, n);
        return NULL;
    }
    *size = (size_t)n;
    return m;
}

isa_program *isa_elf_read(const char *path, char *err, size_t errlen)
{
    reader r = {path, err, errlen};
    size_t size;
    uint8_t *buf = map_file(path, &size, err, errlen);
    if (!buf)
        return NULL;
    isa_program *p = NULL;
    if (check_header(&r, buf, size) == 0) {
        if (elf_version(EV_CURRENT) == EV_NONE) {
            rfail(&r, "libelf: %s", elf_errmsg(-1));
        } else {
            Elf *e = elf_memory((char *)buf, size);
            if (!e) {
                rfail(&r, "not an ELF file: %s", elf_errmsg(-1));
            } else {
                p = parse(&r, e, buf, size);
                elf_end(e);
            }
        }
    }
    munmap(buf, size ? size : 1);
    return p;
}
