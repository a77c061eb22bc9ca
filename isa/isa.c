/* isa.c: everything that derives from the instruction table: lookup,
 * encoding, decoding, operand checks, and the text form of one instruction. */
#include "isa.h"

#include <ctype.h>
#include <errno.h>
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const isa_unit_names[] = {
#define X(id, s) s,
    ISA_UNITS(X)
#undef X
    NULL};
const char *const isa_dtype_names[] = {"dl16", "f32", NULL};
const char *const isa_bmode_names[] = {"vec", "elem", "imm", NULL};
const char *const isa_pt_flag_names[] = {"acc", "f32", NULL};
const char *const isa_sfp_flag_names[] = {"lanes", NULL};

#define OPERAND(nm, kd, bt, fld, df, mn, nms) \
    {nm, kd, bt, offsetof(isa_insn, fld), sizeof(((isa_insn *)0)->fld), df, mn, nms},
#define F(id)                                                          \
    static const isa_operand fmt_##id[] = {ISA_FMT_##id(OPERAND){NULL, 0, 0, 0, 0, 0, 0, NULL}};
ISA_FORMATS(F)
#undef F

static const isa_operand *const fmt_operands[ISA_NFMTS] = {
#define F(id) fmt_##id,
    ISA_FORMATS(F)
#undef F
};

static int count_operands(const isa_operand *o)
{
    int n = 0;
    while (o[n].name)
        n++;
    return n;
}

static isa_opinfo op_table[ISA_NOPS] = {
#define X(id, mn, opc, fmt, cls, cost, sem) {mn, opc, ISA_FMT_ID_##fmt, cls, ISA_COST_##cost, sem, NULL, 0},
    ISA_TABLE(X)
#undef X
};
static int by_opcode[256];
static int table_ready;
static isa_insn insn_default[ISA_NOPS]; /* isa_insn_init's */

/* A number operand's field (1, 2, 4 or 8 bytes: isa_operand.size; 1 and
 * 2 unsigned), as an int64. */
static int64_t field_get(const isa_insn *in, const isa_operand *o)
{
    const char *p = (const char *)in + o->offset;
    switch (o->size) {
    case 1: return *(const uint8_t *)p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { int32_t v; memcpy(&v, p, 4); return v; }
    }
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Set it: v fits (a value of a narrower field is checked first: check_value). */
static void field_set(isa_insn *in, const isa_operand *o, int64_t v)
{
    char *p = (char *)in + o->offset;
    switch (o->size) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: { const uint16_t w = (uint16_t)v; memcpy(p, &w, 2); break; }
    case 4: { const int32_t w = (int32_t)v; memcpy(p, &w, 4); break; }
    default: memcpy(p, &v, 8);
    }
}

/* An instruction of op with every field at its default. */
static void insn_build(isa_insn *in, int op)
{
    memset(in, 0, sizeof *in);
    in->op = (int16_t)op; /* an op of the table: below ISA_NOPS */
    for (int i = 0; i < ISA_MAX_LOOPS; i++)
        in->n[i] = 1;
    in->run = 1;
    in->m = in->nn = in->k = 1;
    in->tok = 0;
    const isa_opinfo *info = &op_table[op]; /* isa_info would wait for the table */
    for (int i = 0; i < info->noperands; i++) {
        const isa_operand *o = &info->operands[i];
        if (o->kind == ISA_K_F32)
            *(float *)((char *)in + o->offset) = (float)o->def;
        else if (o->kind == ISA_K_ADDR)
            *(isa_addr *)((char *)in + o->offset) = isa_addr_at(0, o->def);
        else
            field_set(in, o, o->def);
    }
}

/* Per format and operand: the legal range of a number operand as
 * check_value sees it, so that isa_check (run on each of the millions of
 * instructions a compile makes) compares instead of switching; a value
 * outside goes to check_value for the message. */
#define ISA_MAX_OPERANDS 24
static int64_t range_lo[ISA_NFMTS][ISA_MAX_OPERANDS], range_hi[ISA_NFMTS][ISA_MAX_OPERANDS];

static void ranges_init(void)
{
    for (int f = 0; f < ISA_NFMTS; f++)
        for (int i = 0; fmt_operands[f][i].name; i++) {
            const isa_operand *o = &fmt_operands[f][i];
            assert(i < ISA_MAX_OPERANDS);
            int64_t lo = INT64_MIN, hi = INT64_MAX;
            if (o->kind == ISA_K_U) {
                lo = o->min > 0 ? o->min : 0; /* stricter is safe: check_value has the last word */
                hi = o->bits < 63 ? (int64_t)((1ull << o->bits) - 1) : INT64_MAX;
            } else if (o->kind == ISA_K_S) {
                assert(o->bits < 64);
                lo = -(1ll << (o->bits - 1));
                hi = (1ll << (o->bits - 1)) - 1;
            } else if (o->kind == ISA_K_ENUM) {
                lo = 0;
                hi = isa_name_count(o->names) - 1;
            } else if (o->kind == ISA_K_FLAGS) {
                lo = 0;
                hi = (1ll << isa_name_count(o->names)) - 1;
            }
            range_lo[f][i] = lo;
            range_hi[f][i] = hi;
        }
}

static void table_init(void)
{
    if (table_ready)
        return;
    for (int i = 0; i < 256; i++)
        by_opcode[i] = -1;
    for (int op = 0; op < ISA_NOPS; op++) {
        op_table[op].operands = fmt_operands[op_table[op].format];
        op_table[op].noperands = count_operands(op_table[op].operands);
        by_opcode[op_table[op].opcode] = op;
    }
    for (int op = 0; op < ISA_NOPS; op++)
        insn_build(&insn_default[op], op);
    ranges_init();
    table_ready = 1;
    isa_ops_made = op_table;
    isa_insn_defaults = insn_default;
}

const isa_opinfo *isa_ops_made;
const isa_insn *isa_insn_defaults;

const isa_opinfo *isa_info_first(int op)
{
    table_init();
    if (op < 0 || op >= ISA_NOPS)
        return NULL;
    return &op_table[op];
}

int isa_op_from_opcode(unsigned opcode)
{
    table_init();
    return opcode < 256 ? by_opcode[opcode] : -1;
}

int isa_op_from_mnemonic(const char *s)
{
    table_init();
    for (int op = 0; op < ISA_NOPS; op++)
        if (strcmp(op_table[op].mnemonic, s) == 0)
            return op;
    return -1;
}

int isa_name_count(const char *const *names)
{
    int n = 0;
    while (names[n])
        n++;
    return n;
}

/* Is v a legal value of operand o?  Unsigned, enum and flag fields must fit
 * their bits; signed fields their two's complement range; addresses a
 * register number and a 40-bit offset. */
static int check_value(const isa_operand *o, int64_t v, char *err, size_t len)
{
    switch (o->kind) {
    case ISA_K_U:
        if (v < o->min || (o->bits < 63 && (uint64_t)v >= (1ull << o->bits))) {
            isa_errf(err, len, "operand %s=%" PRId64 " out of range [%" PRId64 ", %" PRIu64 "]", o->name,
                    v, o->min, (uint64_t)((1ull << o->bits) - 1));
            return -1;
        }
        return 0;
    case ISA_K_S: {
        int64_t lo = -(1ll << (o->bits - 1)), hi = (1ll << (o->bits - 1)) - 1;
        if (v < lo || v > hi) {
            isa_errf(err, len, "operand %s=%" PRId64 " out of range [%" PRId64 ", %" PRId64 "]", o->name, v, lo, hi);
            return -1;
        }
        return 0;
    }
    case ISA_K_ENUM:
        if (v < 0 || v >= isa_name_count(o->names)) {
            isa_errf(err, len, "operand %s=%" PRId64 " is not a known value", o->name, v);
            return -1;
        }
        return 0;
    case ISA_K_FLAGS:
        if (v < 0 || v >= (1ll << isa_name_count(o->names))) {
            isa_errf(err, len, "operand %s has unknown flag bits 0x%" PRIx64, o->name, v);
            return -1;
        }
        return 0;
    default:
        return 0;
    }
}

#define ADDR_REG_BITS 4

/* Register reg and offset off in the encoding's range?  0, or -1 with
 * the message naming operand o (isa_check's, and the assembler's before
 * it stores them in the narrower fields). */
static int addr_in_range(const isa_operand *o, int64_t reg, int64_t off, char *err, size_t len)
{
    if (reg < 0 || reg >= ISA_NREGS) {
        isa_errf(err, len, "operand %s: no register r%" PRId64, o->name, reg);
        return -1;
    }
    if (off < 0 || (uint64_t)off >= (1ull << ISA_ADDR_OFF_BITS)) {
        isa_errf(err, len, "operand %s: offset 0x%" PRIx64 " out of range", o->name, off);
        return -1;
    }
    return 0;
}

static int check_operand(const isa_insn *in, const isa_operand *o, char *err, size_t len)
{
    if (o->kind == ISA_K_ADDR) {
        const isa_addr *a = (const isa_addr *)((const char *)in + o->offset);
        return addr_in_range(o, a->reg, a->off, err, len);
    }
    if (o->kind == ISA_K_F32)
        return 0;
    return check_value(o, field_get(in, o), err, len);
}

/* Bit packing over the 512-bit instruction word. */
static void put_bits(uint8_t *w, int pos, int bits, uint64_t v)
{
    if (bits < 64)
        v &= (1ull << bits) - 1;
    while (v) { /* a byte's worth at a time: the bits above v's are zero already (memset) */
        const int sh = pos & 7, take = 8 - sh;
        w[pos >> 3] |= (uint8_t)(v << sh);
        v >>= take;
        pos += take;
    }
}

static uint64_t get_bits(const uint8_t *w, int pos, int bits)
{
    uint64_t v = 0;
    for (int i = 0; i < bits; i++, pos++)
        v |= (uint64_t)((w[pos >> 3] >> (pos & 7)) & 1) << i;
    return v;
}

/* isa_check_addrs's test per format: its address operands alone (as isa_fits_FMT). */
#define FIT_ADDR(nm, kd, bt, fld, df, mn, nms) &(kd != ISA_K_ADDR || isa_addr_fits((const isa_addr *)&in->fld))
#define F(id) \
    static inline int addrs_fit_##id(const isa_insn *in) { return (void)in, 1 ISA_FMT_##id(FIT_ADDR); }
ISA_FORMATS(F)
#undef F

/* Each op's format, known without the table made. */
static const uint8_t op_format[ISA_NOPS] = {
#define X(id, mn, opc, fmt, cls, cost, sem) ISA_FMT_ID_##fmt,
    ISA_TABLE(X)
#undef X
};

/* The message of an instruction isa_set marked bad: the operand whose
 * field could not hold the value stored (or the field's offset, if none
 * of the op's operands is that field). */
static int bad_message(const isa_insn *in, const isa_opinfo *info, char *err, size_t errlen)
{
    const size_t off = (size_t)in->bad - 1;
    for (int i = 0; i < info->noperands; i++)
        if (info->operands[i].offset == off) {
            isa_errf(err, errlen, "operand %s out of range (the value stored does not fit its field)",
                     info->operands[i].name);
            return -1;
        }
    isa_errf(err, errlen, "%s: a value stored at byte %zu is out of range", info->mnemonic, off);
    return -1;
}

/* isa_check's slow path: the message of the first operand out of its
 * field (-1), or 0 when none is.  Apart and cold, so that the fast path
 * keeps to a few registers: with this in it, every check saved six and
 * set up a frame, a tenth of isa_check's time on the prefill layer. */
static __attribute__((noinline, cold)) int check_message(const isa_insn *in, char *err, size_t errlen)
{
    const isa_opinfo *info = isa_info(in->op);
    if (!info) {
        isa_errf(err, errlen, "no instruction with number %d", in->op);
        return -1;
    }
    if (in->bad)
        return bad_message(in, info, err, errlen);
    const int64_t *lo = range_lo[info->format], *hi = range_hi[info->format];
    for (int i = 0; i < info->noperands; i++) {
        const isa_operand *o = &info->operands[i];
        if (o->kind == ISA_K_F32)
            continue;
        if (o->kind == ISA_K_ADDR || field_get(in, o) < lo[i] || field_get(in, o) > hi[i])
            if (check_operand(in, o, err, errlen))
                return -1;
    }
    return 0;
}

/* Is every operand in its field?  (The fast path, apart from isa_check:
 * with no message to keep room for, it needs no saved registers, and
 * every emitted instruction is checked.) */
int isa_fits(const isa_insn *in)
{
    if ((unsigned)in->op >= ISA_NOPS)
        return 0; /* (check_message's "no instruction") */
    switch ((isa_format)op_format[in->op]) {
#define F(id) case ISA_FMT_ID_##id: return isa_fits_##id(in);
        ISA_FORMATS(F)
#undef F
    case ISA_NFMTS:
        break;
    }
    return 0;
}

/* 0 when every operand is in its field (isa_fits), else the message of
 * the first that is not. */
int isa_check(const isa_insn *in, char *err, size_t errlen)
{
    return isa_fits(in) ? 0 : check_message(in, err, errlen);
}

int isa_check_addrs(const isa_insn *in, char *err, size_t errlen)
{
    int ok = 0;
    switch ((unsigned)in->op < ISA_NOPS ? (isa_format)op_format[in->op] : ISA_NFMTS) {
#define F(id) case ISA_FMT_ID_##id: ok = addrs_fit_##id(in); break;
        ISA_FORMATS(F)
#undef F
    case ISA_NFMTS:
        break;
    }
    /* a value isa_set could not store (in->bad) fails here too: the
     * reroll pass's copies check their addresses only */
    return ok && !in->bad ? 0 : isa_check(in, err, errlen); /* the message */
}

int isa_encode(const isa_insn *in, uint8_t out[ISA_INSN_BYTES], char *err, size_t errlen)
{
    if (isa_check(in, err, errlen))
        return -1;
    const isa_opinfo *info = isa_info(in->op);
    memset(out, 0, ISA_INSN_BYTES);
    out[0] = info->opcode;
    int pos = 8;
    for (int i = 0; i < info->noperands; i++) {
        const isa_operand *o = &info->operands[i];
        if (o->kind == ISA_K_ADDR) {
            const isa_addr *a = (const isa_addr *)((const char *)in + o->offset);
            put_bits(out, pos, ADDR_REG_BITS, (uint64_t)a->reg);
            put_bits(out, pos + ADDR_REG_BITS, ISA_ADDR_OFF_BITS, (uint64_t)a->off);
        } else if (o->kind == ISA_K_F32) {
            uint32_t u;
            memcpy(&u, (const char *)in + o->offset, 4);
            put_bits(out, pos, 32, u);
        } else {
            put_bits(out, pos, o->bits, (uint64_t)field_get(in, o));
        }
        pos += o->bits;
    }
    return 0;
}

int isa_decode(const uint8_t in[ISA_INSN_BYTES], isa_insn *out, char *err, size_t errlen)
{
    int op = isa_op_from_opcode(in[0]);
    if (op < 0) {
        isa_errf(err, errlen, "unknown opcode 0x%02x", in[0]);
        return -1;
    }
    const isa_opinfo *info = isa_info(op);
    isa_insn_init(out, op);
    int pos = 8;
    for (int i = 0; i < info->noperands; i++) {
        const isa_operand *o = &info->operands[i];
        if (o->kind == ISA_K_ADDR) {
            isa_addr *a = (isa_addr *)((char *)out + o->offset);
            /* 4 and 40 bits: the fields hold them */
            *a = isa_addr_at((int)get_bits(in, pos, ADDR_REG_BITS),
                             (int64_t)get_bits(in, pos + ADDR_REG_BITS, ISA_ADDR_OFF_BITS));
        } else if (o->kind == ISA_K_F32) {
            uint32_t u = (uint32_t)get_bits(in, pos, 32);
            memcpy((char *)out + o->offset, &u, 4);
        } else {
            uint64_t v = get_bits(in, pos, o->bits);
            if (o->kind == ISA_K_S && o->bits < 64 && (v >> (o->bits - 1)) & 1)
                v |= ~0ull << o->bits;
            field_set(out, o, (int64_t)v);
        }
        if (check_operand(out, o, err, errlen))
            return -1;
        pos += o->bits;
    }
    for (int b = pos; b < ISA_INSN_BYTES * 8; b++)
        if (get_bits(in, b, 1)) {
            isa_errf(err, errlen, "%s: stray bits past the last operand (bit %d)", info->mnemonic, b);
            return -1;
        }
    return 0;
}

static int is_default(const isa_insn *in, const isa_operand *o)
{
    if (o->kind == ISA_K_ADDR) {
        const isa_addr *a = (const isa_addr *)((const char *)in + o->offset);
        return a->reg == 0 && a->off == o->def;
    }
    if (o->kind == ISA_K_F32) {
        float f;
        memcpy(&f, (const char *)in + o->offset, 4);
        uint32_t u, d;
        float df = (float)o->def;
        memcpy(&u, &f, 4);
        memcpy(&d, &df, 4);
        return u == d;
    }
    return field_get(in, o) == o->def;
}

void isa_format_insn(const isa_insn *in, char *buf, size_t len)
{
    const isa_opinfo *info = isa_info(in->op);
    size_t n = (size_t)snprintf(buf, len, "%s", info ? info->mnemonic : "?");
    if (!info)
        return;
    for (int i = 0; i < info->noperands && n < len; i++) {
        const isa_operand *o = &info->operands[i];
        if (is_default(in, o))
            continue;
        char v[96];
        switch (o->kind) {
        case ISA_K_ADDR: {
            const isa_addr *a = (const isa_addr *)((const char *)in + o->offset);
            if (a->reg)
                snprintf(v, sizeof v, "r%" PRId64 "+0x%" PRIx64, (int64_t)a->reg, (int64_t)a->off);
            else
                snprintf(v, sizeof v, "0x%" PRIx64, (int64_t)a->off);
            break;
        }
        case ISA_K_F32: {
            float f;
            memcpy(&f, (const char *)in + o->offset, 4);
            snprintf(v, sizeof v, "%.9g", (double)f);
            break;
        }
        case ISA_K_ENUM:
            snprintf(v, sizeof v, "%s", o->names[field_get(in, o)]);
            break;
        case ISA_K_FLAGS: {
            int64_t fl = field_get(in, o);
            v[0] = 0;
            for (int b = 0; o->names[b]; b++)
                if (fl & (1ll << b)) {
                    if (v[0])
                        strcat(v, "|");
                    strcat(v, o->names[b]);
                }
            break;
        }
        default:
            snprintf(v, sizeof v, "%" PRId64, field_get(in, o));
        }
        n += (size_t)snprintf(buf + n, len - n, " %s=%s", o->name, v);
    }
}

int isa_parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

/* The index of the name among names (NULL-terminated) that is s's first
 * n characters, or -1. */
static int name_index_n(const char *const *names, const char *s, size_t n)
{
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == n && !strncmp(names[i], s, n))
            return i;
    return -1;
}

int isa_name_index(const char *const *names, const char *s)
{
    return name_index_n(names, s, strlen(s));
}

/* The names of s joined with | (empty ones skipped) as flag bits of o,
 * read in place: a copy into a fixed buffer had cut a long value and
 * dropped the names past its end unread. */
static int parse_flags(const isa_operand *o, const char *s, int64_t *fl, char *err, size_t len)
{
    *fl = 0;
    for (const char *p = s;; p++) {
        const size_t n = strcspn(p, "|");
        const int i = n ? name_index_n(o->names, p, n) : 0;
        if (i < 0) {
            isa_errf(err, len, "operand %s: unknown flag '%.*s'", o->name, n > 64 ? 64 : (int)n, p);
            return -1;
        }
        if (n)
            *fl |= 1ll << i;
        p += n;
        if (!*p)
            return 0;
    }
}

static int parse_value(const isa_operand *o, const char *s, isa_insn *out, char *err, size_t len)
{
    switch (o->kind) {
    case ISA_K_ADDR: {
        long r = 0;
        int64_t off = 0;
        const char *p = s;
        if (p[0] == 'r' && isdigit((unsigned char)p[1])) {
            char *end;
            r = strtol(p + 1, &end, 10);
            if (*end != 0 && *end != '+') {
                isa_errf(err, len, "operand %s: expected rN+OFFSET, got '%s'", o->name, s);
                return -1;
            }
            p = *end ? end + 1 : NULL;
        }
        if (p && isa_parse_int(p, &off)) {
            isa_errf(err, len, "operand %s: '%s' is not an address", o->name, s);
            return -1;
        }
        if (addr_in_range(o, r, off, err, len)) /* the narrow fields would wrap a wild value */
            return -1;
        *(isa_addr *)((char *)out + o->offset) = isa_addr_at((int)r, off);
        break;
    }
    case ISA_K_F32: {
        char *end;
        float f = strtof(s, &end);
        if (end == s || *end) {
            isa_errf(err, len, "operand %s: '%s' is not a number", o->name, s);
            return -1;
        }
        memcpy((char *)out + o->offset, &f, 4);
        break;
    }
    case ISA_K_ENUM: {
        int i = isa_name_index(o->names, s);
        if (i < 0) {
            isa_errf(err, len, "operand %s: unknown value '%s'", o->name, s);
            return -1;
        }
        field_set(out, o, i);
        break;
    }
    case ISA_K_FLAGS: {
        int64_t fl;
        if (parse_flags(o, s, &fl, err, len))
            return -1;
        field_set(out, o, fl);
        break;
    }
    default: {
        int64_t v;
        if (isa_parse_int(s, &v)) {
            isa_errf(err, len, "operand %s: '%s' is not an integer", o->name, s);
            return -1;
        }
        if (check_value(o, v, err, len)) /* before a 4-byte field would wrap it */
            return -1;
        field_set(out, o, v);
    }
    }
    return check_operand(out, o, err, len);
}

int isa_parse_insn(const char *text, isa_insn *out, char *err, size_t errlen)
{
    char buf[1024];
    if (strlen(text) >= sizeof buf) {
        isa_errf(err, errlen, "line too long");
        return -1;
    }
    strcpy(buf, text);
    char *save = NULL;
    char *mn = strtok_r(buf, " \t", &save);
    if (!mn) {
        isa_errf(err, errlen, "expected an instruction");
        return -1;
    }
    int op = isa_op_from_mnemonic(mn);
    if (op < 0) {
        isa_errf(err, errlen, "unknown instruction '%s'", mn);
        return -1;
    }
    const isa_opinfo *info = isa_info(op);
    isa_insn_init(out, op);
    unsigned long long seen = 0;
    for (char *tok = strtok_r(NULL, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            isa_errf(err, errlen, "%s: expected NAME=VALUE, got '%s'", mn, tok);
            return -1;
        }
        *eq = 0;
        int found = -1;
        for (int i = 0; i < info->noperands; i++)
            if (strcmp(info->operands[i].name, tok) == 0)
                found = i;
        if (found < 0) {
            isa_errf(err, errlen, "%s has no operand '%s'", mn, tok);
            return -1;
        }
        if (seen & (1ull << found)) {
            isa_errf(err, errlen, "%s: operand '%s' given twice", mn, tok);
            return -1;
        }
        seen |= 1ull << found;
        char e2[200];
        if (parse_value(&info->operands[found], eq + 1, out, e2, sizeof e2)) {
            isa_errf(err, errlen, "%s: %s", mn, e2);
            return -1;
        }
    }
    for (int i = 0; i < info->noperands; i++)
        if (!(seen & (1ull << i)) && check_operand(out, &info->operands[i], NULL, 0)) {
            isa_errf(err, errlen, "%s: operand %s must be given", mn, info->operands[i].name);
            return -1;
        }
    return 0;
}
