/* test_isa: the instruction table, encoding, decoding, text form, and the
 * DL16 / fp16 number conversions. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isa.h"
#include "testutil.h"

/* ---- helpers ---- */

/* Set number operand o's field (1, 2, 4 or 8 bytes: o->size) to v as isa_set
 * would: a value the field cannot hold marks in bad. */
static void set_field(isa_insn *in, const isa_operand *o, int64_t v)
{
    char *p = (char *)in + o->offset;
    switch (o->size) {
    case 1: isa_store8(in, (uint8_t *)p, v); break;
    case 2: isa_store16(in, (uint16_t *)p, v); break;
    case 4: isa_store32(in, (int32_t *)p, v); break;
    default: memcpy(p, &v, 8);
    }
}

static int addr_eq(isa_addr x, isa_addr y)
{
    return x.reg == y.reg && x.off == y.off;
}

/* Every field of the decoded-instruction struct, compared one by one. */
static int insn_equal(const isa_insn *x, const isa_insn *y)
{
    uint32_t ix, iy;
    memcpy(&ix, &x->imm, 4);
    memcpy(&iy, &y->imm, 4);
    int eq = x->op == y->op && x->c == y->c && x->u == y->u && x->t == y->t && x->tok == y->tok &&
             x->core == y->core && x->reg == y->reg && x->val == y->val && x->flags == y->flags && x->bm == y->bm &&
             addr_eq(x->d, y->d) && addr_eq(x->a, y->a) && addr_eq(x->b, y->b) && addr_eq(x->p, y->p) &&
             x->run == y->run && x->ps == y->ps && x->m == y->m && x->nn == y->nn && x->k == y->k &&
             x->vl == y->vl && ix == iy;
    for (int l = 0; l < ISA_MAX_LOOPS; l++)
        eq = eq && x->n[l] == y->n[l] && x->ds[l] == y->ds[l] && x->as[l] == y->as[l];
    for (int l = 0; l < 2; l++) /* (b has two levels) */
        eq = eq && x->bs[l] == y->bs[l];
    return eq;
}

/* An instruction of op whose every operand is legal and differs from its
 * default, with a different value per operand so swapped fields show. */
static void fill_nondefault(isa_insn *in, int op)
{
    const isa_opinfo *info = isa_info(op);
    isa_insn_init(in, op);
    for (int i = 0; i < info->noperands; i++) {
        const isa_operand *o = &info->operands[i];
        switch (o->kind) {
        case ISA_K_U: {
            int64_t max = (int64_t)((1ull << o->bits) - 1), span = max - o->min;
            int64_t v = o->min + 1 + (int64_t)(i * 37) % span;
            if (v == o->def)
                v = v < max ? v + 1 : v - 1;
            set_field(in, o, v);
            break;
        }
        case ISA_K_S:
            set_field(in, o, -(int64_t)(1000 * i + 123)); /* negative: the sign must survive */
            break;
        case ISA_K_ADDR: {
            /* top bit of the 40-bit offset set */
            *(isa_addr *)((char *)in + o->offset) =
                isa_addr_at(1 + i % (ISA_NREGS - 1), (int64_t)(1ull << 39) + 0x80 * i);
            break;
        }
        case ISA_K_F32:
            *(float *)((char *)in + o->offset) = 1.5f + (float)i;
            break;
        case ISA_K_ENUM:
            set_field(in, o, isa_name_count(o->names) - 1);
            break;
        case ISA_K_FLAGS:
            set_field(in, o, (1 << isa_name_count(o->names)) - 1);
            break;
        }
    }
}

/* ---- the instruction table ---- */

static void test_every_instruction_encodes_decodes_formats_and_parses_back(void)
{
    for (int op = 0; op < ISA_NOPS; op++) {
        const isa_opinfo *info = isa_info(op);
        isa_insn in, out, parsed;
        uint8_t w[ISA_INSN_BYTES], w2[ISA_INSN_BYTES];
        char err[256], text[1024];
        fill_nondefault(&in, op);
        int rc = isa_encode(&in, w, err, sizeof err);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_EQUAL(w[0], info->opcode);
        CU_ASSERT_EQUAL_FATAL(isa_decode(w, &out, err, sizeof err), 0);
        CU_ASSERT(insn_equal(&in, &out));

        isa_format_insn(&in, text, sizeof text);
        CU_ASSERT_EQUAL(strncmp(text, info->mnemonic, strlen(info->mnemonic)), 0);
        for (int i = 0; i < info->noperands; i++) { /* nothing is at its default */
            char want[64];
            snprintf(want, sizeof want, " %s=", info->operands[i].name);
            CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
        }
        rc = isa_parse_insn(text, &parsed, err, sizeof err);
        if (rc)
            fprintf(stderr, "%s: %s\n", text, err);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT(insn_equal(&in, &parsed));
        CU_ASSERT_EQUAL_FATAL(isa_encode(&parsed, w2, err, sizeof err), 0);
        CU_ASSERT_EQUAL(memcmp(w, w2, ISA_INSN_BYTES), 0);
    }
}

static void test_default_instruction_formats_as_bare_mnemonic(void)
{
    for (int op = 0; op < ISA_NOPS; op++) {
        isa_insn in, parsed;
        char text[1024], err[256];
        isa_insn_init(&in, op);
        isa_format_insn(&in, text, sizeof text);
        CU_ASSERT_STRING_EQUAL(text, isa_info(op)->mnemonic);
        uint8_t w[ISA_INSN_BYTES];
        if (isa_encode(&in, w, err, sizeof err) == 0) {
            CU_ASSERT_EQUAL(isa_parse_insn(text, &parsed, err, sizeof err), 0);
            CU_ASSERT(insn_equal(&in, &parsed));
        } else { /* an operand without a legal default must be written out */
            CU_ASSERT_EQUAL(isa_parse_insn(text, &parsed, err, sizeof err), -1);
            CU_ASSERT_PTR_NOT_NULL(strstr(err, "must be given"));
        }
    }
}

/* isa_tok_insn stores a wait's or sig's fields without the default's
 * copy: byte for byte the default with u and tok set (garbage below it
 * first, as in a reused stream). */
static void test_a_token_instruction_is_its_default_with_unit_and_token(void)
{
    const int ops[] = {ISA_OP_WAIT, ISA_OP_SIG};
    for (int i = 0; i < 2; i++)
        for (int u = 0; u <= ISA_U_SEQ; u++)
            for (int tok = 0; tok < 256; tok += 85) {
                isa_insn want, got;
                isa_insn_init(&want, ops[i]);
                want.u = (uint8_t)u;
                want.tok = (uint8_t)tok;
                memset(&got, 0xa5, sizeof got);
                isa_tok_insn(&got, ops[i], (uint8_t)u, (uint8_t)tok);
                CU_ASSERT_EQUAL(memcmp(&got, &want, sizeof got), 0);
            }
}

static void test_opcodes_and_mnemonics_are_unique(void)
{
    for (int x = 0; x < ISA_NOPS; x++) {
        const isa_opinfo *a = isa_info(x);
        CU_ASSERT_EQUAL(isa_op_from_opcode(a->opcode), x);
        CU_ASSERT_EQUAL(isa_op_from_mnemonic(a->mnemonic), x);
        for (int y = x + 1; y < ISA_NOPS; y++) {
            const isa_opinfo *b = isa_info(y);
            CU_ASSERT_NOT_EQUAL(a->opcode, b->opcode);
            CU_ASSERT_NOT_EQUAL(strcmp(a->mnemonic, b->mnemonic), 0);
        }
    }
}

/* The bits of an instruction of op: the opcode byte and its operands. */
static int format_bits(const isa_opinfo *info)
{
    int bits = 8;
    for (int i = 0; i < info->noperands; i++)
        bits += info->operands[i].bits;
    return bits;
}

static void test_every_format_fits_the_instruction_word(void)
{
    for (int op = 0; op < ISA_NOPS; op++)
        CU_ASSERT(format_bits(isa_info(op)) <= ISA_INSN_BYTES * 8);
}

static void test_unknown_opcode_fails_to_decode(void)
{
    int unknown = 0;
    for (unsigned opc = 0; opc < 256; opc++) {
        if (isa_op_from_opcode(opc) >= 0)
            continue;
        uint8_t w[ISA_INSN_BYTES] = {(uint8_t)opc};
        isa_insn in;
        char err[256] = "", want[32];
        CU_ASSERT_EQUAL(isa_decode(w, &in, err, sizeof err), -1);
        snprintf(want, sizeof want, "unknown opcode 0x%02x", opc);
        CU_ASSERT_STRING_EQUAL(err, want);
        unknown++;
    }
    CU_ASSERT_EQUAL(unknown, 256 - ISA_NOPS);
    CU_ASSERT_EQUAL(isa_op_from_opcode(256), -1);
    CU_ASSERT_EQUAL(isa_op_from_mnemonic("frob"), -1);
}

static void test_stray_bits_past_the_last_operand_fail_to_decode(void)
{
    for (int op = 0; op < ISA_NOPS; op++) {
        int first_pad = format_bits(isa_info(op));
        isa_insn in, out;
        uint8_t w[ISA_INSN_BYTES];
        char err[256] = "";
        fill_nondefault(&in, op);
        CU_ASSERT_EQUAL_FATAL(isa_encode(&in, w, err, sizeof err), 0);
        for (int bit = first_pad; bit < ISA_INSN_BYTES * 8; bit += 61) {
            uint8_t bad[ISA_INSN_BYTES];
            memcpy(bad, w, sizeof bad);
            bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            err[0] = 0;
            CU_ASSERT_EQUAL(isa_decode(bad, &out, err, sizeof err), -1);
            CU_ASSERT_PTR_NOT_NULL(strstr(err, "stray bits"));
        }
        uint8_t last[ISA_INSN_BYTES];
        memcpy(last, w, sizeof last);
        last[ISA_INSN_BYTES - 1] |= 0x80;
        CU_ASSERT_EQUAL(isa_decode(last, &out, err, sizeof err), -1);
    }
}

/* Encoding in with one field changed fails with a message naming operand. */
static void expect_encode_error(const isa_insn *in, const char *operand)
{
    uint8_t w[ISA_INSN_BYTES];
    char err[256] = "", want[64];
    CU_ASSERT_EQUAL(isa_encode(in, w, err, sizeof err), -1);
    snprintf(want, sizeof want, "operand %s", operand);
    if (!strstr(err, want))
        fprintf(stderr, "expected '%s' in '%s'\n", want, err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
}

/* An instruction of op at its defaults but for one field set to value
 * fails to encode, naming operand. */
#define EXPECT_ENCODE_ERROR(op, field, value, operand)                                                                 \
    do {                                                                                                               \
        isa_insn_init(&in, op);                                                                                        \
        in.field = value;                                                                                              \
        expect_encode_error(&in, operand);                                                                             \
    } while (0)

/* The same through isa_set, for a value the field cannot hold (the
 * store marks the instruction bad; isa_encode names the operand). */
#define EXPECT_SET_ERROR(op, field, value, operand)                                                                    \
    do {                                                                                                               \
        isa_insn_init(&in, op);                                                                                        \
        isa_set(&in, field, value);                                                                                    \
        expect_encode_error(&in, operand);                                                                             \
    } while (0)

static void test_out_of_range_operands_fail_to_encode_naming_the_operand(void)
{
    isa_insn in;
    EXPECT_ENCODE_ERROR(ISA_OP_DMA_LD, run, 0, "run"); /* below the minimum */
    EXPECT_SET_ERROR(ISA_OP_DMA_LD, run, 1 << 16, "run"); /* does not fit 16 bits */
    EXPECT_ENCODE_ERROR(ISA_OP_DMA_LD, n[3], 0, "n3");
    isa_insn_init(&in, ISA_OP_DMA_ST);
    isa_set(&in, ds[1], (int64_t)1 << 31); /* one past the largest signed 32-bit */
    expect_encode_error(&in, "ds1");
    isa_insn_init(&in, ISA_OP_DMA_ST);
    isa_set(&in, as[0], -((int64_t)1 << 31) - 1);
    expect_encode_error(&in, "as0");
    EXPECT_ENCODE_ERROR(ISA_OP_DMA_LX, d.reg, ISA_NREGS, "d");
    EXPECT_ENCODE_ERROR(ISA_OP_DMA_LX, a.off, (int64_t)1 << 40, "a");
    EXPECT_ENCODE_ERROR(ISA_OP_DMA_LX, a.off, -1, "a");
    EXPECT_ENCODE_ERROR(ISA_OP_LI, reg, 0, "r"); /* r0 is hard-wired to zero */
    isa_insn_init(&in, ISA_OP_LI);
    in.reg = 1;
    in.val = (int64_t)1 << 47;
    expect_encode_error(&in, "v");
    EXPECT_ENCODE_ERROR(ISA_OP_LOOP, val, 0, "n");
    EXPECT_ENCODE_ERROR(ISA_OP_WAIT, u, ISA_NUNITS, "u"); /* fits 3 bits but names no unit */
    EXPECT_SET_ERROR(ISA_OP_SIG, tok, 256, "t");
    EXPECT_ENCODE_ERROR(ISA_OP_PT_MM, flags, 4, "f");
    EXPECT_ENCODE_ERROR(ISA_OP_PT_MM, c, 2, "c");
    EXPECT_ENCODE_ERROR(ISA_OP_SFP_ADD, bm, 3, "bm");
    EXPECT_ENCODE_ERROR(ISA_OP_SFP_RSUM, vl, 1 << 24, "vl");
    EXPECT_SET_ERROR(ISA_OP_RING_SEND, core, 256, "core");
}

/* The legal range of number operand o by its row (kind, bits, min, names). */
static void operand_range(const isa_operand *o, int64_t *lo, int64_t *hi)
{
    const int names = o->names ? isa_name_count(o->names) : 0;
    switch (o->kind) {
    case ISA_K_S:
        *lo = -((int64_t)1 << (o->bits - 1));
        *hi = ((int64_t)1 << (o->bits - 1)) - 1;
        return;
    case ISA_K_ENUM:
        *lo = 0;
        *hi = names - 1;
        return;
    case ISA_K_FLAGS:
        *lo = 0;
        *hi = ((int64_t)1 << names) - 1;
        return;
    default:
        *lo = o->min > 0 ? o->min : 0;
        *hi = (int64_t)((1ull << o->bits) - 1);
    }
}

/* isa_fits (the emitters' check, made per format) agrees with the operand
 * rows at every number operand's edges: its lowest and highest values
 * fit, one past either does not and isa_check names the operand (one
 * its field cannot hold is stored as isa_set stores it: marked bad). */
static void test_every_operand_fits_exactly_its_range(void)
{
    char err[256];
    for (int op = 0; op < ISA_NOPS; op++) {
        const isa_opinfo *info = isa_info(op);
        for (int i = 0; i < info->noperands; i++) {
            const isa_operand *o = &info->operands[i];
            if (o->kind == ISA_K_ADDR || o->kind == ISA_K_F32)
                continue;
            int64_t lo, hi;
            operand_range(o, &lo, &hi);
            const int64_t v[4] = {lo, hi, lo - 1, hi + 1};
            for (int k = 0; k < 4; k++) {
                isa_insn in;
                fill_nondefault(&in, op);
                set_field(&in, o, v[k]);
                CU_ASSERT_EQUAL(isa_fits(&in), k < 2);
                CU_ASSERT_EQUAL(isa_check(&in, err, sizeof err), k < 2 ? 0 : -1);
                if (k >= 2) {
                    char want[64];
                    snprintf(want, sizeof want, "operand %s", o->name);
                    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
                }
            }
        }
    }
}

/* isa_check_addrs looks at the address operands alone: an address out of
 * its field fails with isa_check's message naming it, a number operand
 * out of range is left to isa_check. */
static void test_address_check_names_a_bad_address_and_ignores_other_operands(void)
{
    isa_insn in;
    char err[256] = "";
    isa_insn_init(&in, ISA_OP_DMA_LD);
    in.d.reg = ISA_NREGS - 1;
    in.d.off = ((int64_t)1 << 40) - 1;
    CU_ASSERT_EQUAL(isa_check_addrs(&in, err, sizeof err), 0);
    in.a.off = (int64_t)1 << 40;
    CU_ASSERT_EQUAL(isa_check_addrs(&in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "operand a"));
    in.a.off = 0;
    in.d.reg = ISA_NREGS;
    CU_ASSERT_EQUAL(isa_check_addrs(&in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "operand d"));
    in.d.reg = 0;
    in.run = 0; /* below its minimum: isa_check's, not an address */
    CU_ASSERT_EQUAL(isa_check_addrs(&in, err, sizeof err), 0);
    CU_ASSERT_EQUAL(isa_check(&in, err, sizeof err), -1);
}

static void test_largest_legal_operands_encode(void)
{
    isa_insn in, out;
    uint8_t w[ISA_INSN_BYTES];
    char err[256];
    isa_insn_init(&in, ISA_OP_DMA_LD);
    in.run = 65535;
    in.d.reg = ISA_NREGS - 1;
    in.d.off = ((int64_t)1 << 40) - 1;
    in.ds[3] = ((int64_t)1 << 31) - 1;
    in.as[3] = -((int64_t)1 << 31);
    CU_ASSERT_EQUAL_FATAL(isa_encode(&in, w, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(isa_decode(w, &out, err, sizeof err), 0);
    CU_ASSERT(insn_equal(&in, &out));
    isa_insn_init(&in, ISA_OP_LI);
    in.reg = 15;
    in.val = -((int64_t)1 << 47);
    CU_ASSERT_EQUAL_FATAL(isa_encode(&in, w, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(isa_decode(w, &out, err, sizeof err), 0);
    CU_ASSERT_EQUAL(out.val, -((int64_t)1 << 47));
}

static void test_parse_errors_name_the_problem(void)
{
    isa_insn in;
    char err[256];
    CU_ASSERT_EQUAL(isa_parse_insn("frob d=1", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "frob"));
    CU_ASSERT_EQUAL(isa_parse_insn("dma.ld run=0", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "run"));
    CU_ASSERT_EQUAL(isa_parse_insn("dma.ld bogus=1", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "bogus"));
    CU_ASSERT_EQUAL(isa_parse_insn("dma.ld run=2 run=3", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "twice"));
    CU_ASSERT_EQUAL(isa_parse_insn("sfp.add bm=wide", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "wide"));
    CU_ASSERT_EQUAL(isa_parse_insn("wait u=dmai t", &in, err, sizeof err), -1);
}

/* A flag list is read to its end however long: an unknown name past 127
 * characters was cut off unread and the instruction taken. */
static void test_parse_reads_a_long_flag_list_to_its_end(void)
{
    isa_insn in;
    char err[256] = "", text[400] = "pt.mm f=";
    for (int i = 0; i < 32; i++)
        strcat(text, "acc|");
    CU_ASSERT_EQUAL(isa_parse_insn(strcat(text, "f32"), &in, err, sizeof err), 0);
    CU_ASSERT_EQUAL(in.flags, ISA_F_ACC | ISA_F_F32);
    CU_ASSERT_EQUAL(isa_parse_insn(strcat(text, "|bogus"), &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown flag 'bogus'"));
    CU_ASSERT_EQUAL(isa_parse_insn("pt.mm f=|acc||f32|", &in, err, sizeof err), 0); /* empty names skipped */
    CU_ASSERT_EQUAL(in.flags, ISA_F_ACC | ISA_F_F32);
    CU_ASSERT_EQUAL(isa_parse_insn("pt.mm f=ac", &in, err, sizeof err), -1); /* a prefix is no name */
    CU_ASSERT_EQUAL(isa_parse_insn("pt.mm f=accx", &in, err, sizeof err), -1);
}

/* The few-bit operands are 8-bit fields, the registers of addresses 8
 * bits and their offsets 56: a text value past them is refused by its
 * range, not wrapped into it (257 would wrap to 1, 2^56 + 128 to 128). */
static void test_parse_refuses_a_value_a_narrow_field_would_wrap(void)
{
    isa_insn in;
    char err[256] = "";
    CU_ASSERT_EQUAL(sizeof in.tok, 1);
    CU_ASSERT_EQUAL(isa_parse_insn("sig u=dmai t=257", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of range"));
    CU_ASSERT_EQUAL(isa_parse_insn("sig u=dmai t=4294967297", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of range"));
    CU_ASSERT_EQUAL(isa_parse_insn("ring.send core=258", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "core"));
    CU_ASSERT_EQUAL(isa_parse_insn("dma.lx d=r257+0x80", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no register r257"));
    CU_ASSERT_EQUAL(isa_parse_insn("dma.lx a=72057594037928064", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "operand a"));
    CU_ASSERT_EQUAL(isa_parse_insn("sig u=dmai t=255", &in, err, sizeof err), 0);
    CU_ASSERT_EQUAL(in.tok, 255);
}

/* A computed address whose offset (or register) its field cannot hold is
 * made one isa_addr_fits refuses, never a wrapped one that would pass. */
static void test_an_address_past_its_fields_is_refused(void)
{
    CU_ASSERT_EQUAL(sizeof(isa_addr), 8);
    isa_addr a = isa_addr_at(0, ((int64_t)1 << 56) + 128);
    CU_ASSERT_FALSE(isa_addr_fits(&a));
    a = isa_addr_at(257, 128);
    CU_ASSERT_FALSE(isa_addr_fits(&a));
    a = isa_addr_at(-1, 128);
    CU_ASSERT_FALSE(isa_addr_fits(&a));
    a = isa_addr_at(ISA_NREGS - 1, ((int64_t)1 << ISA_ADDR_OFF_BITS) - 1);
    CU_ASSERT_TRUE(isa_addr_fits(&a));
    CU_ASSERT_EQUAL(a.reg, ISA_NREGS - 1);
    CU_ASSERT_EQUAL(a.off, ((int64_t)1 << ISA_ADDR_OFF_BITS) - 1);
    /* an unfit offset read back and moved (code adds a run's offset to
     * .off) stays refused: it was -1, and -1 + 4096 passed */
    a = isa_addr_at(0, ((int64_t)1 << 58) + 4096);
    isa_set_off(&a, a.off + 4096);
    CU_ASSERT_FALSE(isa_addr_fits(&a));
    isa_set_off(&a, a.off + ((int64_t)1 << 40));
    CU_ASSERT_FALSE(isa_addr_fits(&a));
}

/* The strides are 32-bit fields and the counts 16-bit: a computed value
 * past its field stored through isa_set is refused naming its operand,
 * not wrapped into range (2^32 + 128 would wrap to a legal stride of 128,
 * 2^16 + 2 to a run of 2), and a text value so large is refused by its
 * range. */
static void test_a_count_or_stride_past_its_field_is_refused(void)
{
    isa_insn in;
    char err[256] = "";
    CU_ASSERT_EQUAL(sizeof in.ds[0], 4);
    isa_insn_init(&in, ISA_OP_DMA_LD);
    isa_set(&in, ds[0], ((int64_t)1 << 32) + 128);
    CU_ASSERT_FALSE(isa_fits_DMA(&in));
    expect_encode_error(&in, "ds0");
    isa_insn_init(&in, ISA_OP_PT_MM);
    isa_set(&in, ps, (int64_t)1 << 40);
    isa_set(&in, m, 8); /* a later store that fits keeps the first one named */
    expect_encode_error(&in, "ps");
    isa_insn_init(&in, ISA_OP_DMA_LD);
    isa_set(&in, run, ((int64_t)1 << 16) + 2);
    expect_encode_error(&in, "run");
    isa_insn_init(&in, ISA_OP_PT_MM);
    isa_set(&in, k, ((int64_t)1 << 16) + 64);
    CU_ASSERT_FALSE(isa_fits_PT(&in));
    expect_encode_error(&in, "k");
    CU_ASSERT_EQUAL(isa_parse_insn("dma.ld ds0=4294967424", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "ds0"));
    CU_ASSERT_EQUAL(isa_parse_insn("dma.ld n1=65537", &in, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "n1"));
    CU_ASSERT_EQUAL(isa_parse_insn("dma.ld ds0=-128 n1=7", &in, err, sizeof err), 0);
    CU_ASSERT_EQUAL(in.ds[0], -128);
    CU_ASSERT_EQUAL(in.n[1], 7);
}

/* A stream grows through many remappings (isa_stream_grow) with every
 * instruction where it was put, including one the ELF reader would have
 * allocated exactly (a malloc'd start), and isa_stream_free empties it. */
static void test_a_growing_stream_keeps_its_instructions(void)
{
    isa_stream s = {0};
    s.insns = malloc(3 * sizeof *s.insns);
    s.cap = 3;
    const long n = 20000;
    for (long i = 0; i < n; i++) {
        isa_insn *in = isa_stream_room(&s);
        isa_insn_init(in, ISA_OP_LI);
        isa_set(in, reg, 1 + (int)(i % 15));
        in->val = i * 7;
        s.n++;
    }
    CU_ASSERT_EQUAL(s.n, (size_t)n);
    CU_ASSERT(s.cap >= s.n);
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += s.insns[i].op != ISA_OP_LI || s.insns[i].val != i * 7 || s.insns[i].reg != 1 + (int)(i % 15);
    CU_ASSERT_EQUAL(bad, 0);
    isa_stream_free(&s);
    CU_ASSERT_PTR_NULL(s.insns);
    CU_ASSERT_EQUAL(s.n, 0);
    CU_ASSERT_EQUAL(s.cap, 0);
}

/* Streams growing in their program's arena (isa_program_arena) keep
 * every instruction: four grown by turns at different rates (slots given
 * back by one are taken by another), one with a malloc'd start, one
 * emptied by isa_stream_free and grown again, and (the arena 1 MB) the
 * largest growing on in mappings of their own once it is full. */
static void test_streams_growing_in_an_arena_keep_their_instructions(void)
{
    isa_program *p = isa_program_new(4);
    p->cores[1].insns = malloc(3 * sizeof *p->cores[1].insns);
    p->cores[1].cap = 3;
    isa_program_arena(p, (size_t)1 << 20);
    const long n = 6000; /* core c gets n >> c instructions: core 0's 1.7 MB outgrow the arena */
    for (long i = 0; i < n; i++)
        for (int c = 0; c < 4; c++) {
            if (c == 3 && i == 1000)
                isa_stream_free(&p->cores[3]); /* its first 125 gone: it starts again */
            if (i % (1L << c))
                continue;
            isa_insn *in = isa_stream_room(&p->cores[c]);
            isa_insn_init(in, ISA_OP_LI);
            isa_set(in, reg, 1 + c);
            in->val = i * 7 + c;
            p->cores[c].n++;
        }
    long bad = 0;
    for (int c = 0; c < 4; c++) {
        const long from = c == 3 ? 1000 : 0;
        size_t k = 0;
        for (long i = from; i < n; i += 1L << c, k++)
            bad += k >= p->cores[c].n || p->cores[c].insns[k].val != i * 7 + c || p->cores[c].insns[k].reg != 1 + c;
        CU_ASSERT_EQUAL(p->cores[c].n, k);
    }
    CU_ASSERT_EQUAL(bad, 0);
    isa_program_free(p);
}

/* A stream reserved ahead (isa_stream_reserve) has room for what was
 * asked, at least twice what it had, in one growth, its instructions
 * kept; a reserve within its room changes nothing.  In an arena (its
 * slots powers of two) and without (a mapping of its own, or the heap
 * under AddressSanitizer). */
static void reserve_keeps(isa_program *p)
{
    isa_stream *s = &p->cores[0];
    for (long i = 0; i < 300; i++) {
        isa_insn *in = isa_stream_room(s);
        isa_insn_init(in, ISA_OP_LI);
        in->val = i;
        s->n++;
    }
    const size_t cap = s->cap;
    const isa_insn *at = s->insns;
    isa_stream_reserve(s, cap);
    CU_ASSERT(s->insns == at && s->cap == cap);
    isa_stream_reserve(s, cap + 1);
    CU_ASSERT(s->cap >= 2 * cap);
    isa_stream_reserve(s, 5 * cap);
    CU_ASSERT(s->cap >= 5 * cap);
    long bad = 0;
    for (long i = 0; i < 300; i++)
        bad += s->insns[i].op != ISA_OP_LI || s->insns[i].val != i;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(s->n, 300);
    isa_program_free(p);
}

static void test_a_stream_reserved_ahead_keeps_its_instructions(void)
{
    isa_program *p = isa_program_new(1);
    isa_program_arena(p, (size_t)1 << 24);
    reserve_keeps(p);
    reserve_keeps(isa_program_new(1));
}

/* Byte buffers in an arena (isa_buf) keep the bytes asked kept: three
 * grown by turns (slots given back by one are taken by another), one
 * small enough to stay on the heap, and (the arena 1 MB) one grown past
 * it back onto the heap; the same without an arena. */
static void buffers_keep_their_bytes(isa_arena *a)
{
    isa_buf b[3] = {{.arena = a}, {.arena = a}, {.arena = a}};
    size_t n[3] = {0};
    const size_t top[3] = {1000, 200000, 2000000}; /* bytes each reaches */
    for (int step = 0; step < 40; step++)
        for (int i = 0; i < 3; i++) {
            const size_t m = top[i] * (size_t)(step + 1) / 40;
            unsigned char *p = isa_buf_reserve(&b[i], m, n[i]);
            for (size_t j = n[i]; j < m; j++)
                p[j] = (unsigned char)(j * 7 + (size_t)i);
            n[i] = m;
        }
    for (int i = 0; i < 3; i++) {
        long bad = 0;
        for (size_t j = 0; j < n[i]; j++)
            bad += ((unsigned char *)b[i].p)[j] != (unsigned char)(j * 7 + (size_t)i);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT(b[i].cap >= n[i]);
    }
    CU_ASSERT_EQUAL(b[0].slot, 0); /* 1,000 bytes: the heap's */
    CU_ASSERT_EQUAL(b[2].slot, 0); /* 2 MB: past the arena */
    CU_ASSERT_EQUAL(b[1].slot, a != NULL);
    for (int i = 0; i < 3; i++) {
        isa_buf_free(&b[i]);
        CU_ASSERT_PTR_NULL(b[i].p);
        CU_ASSERT_PTR_EQUAL(b[i].arena, a);
    }
}

static void test_buffers_in_an_arena_keep_their_bytes(void)
{
    isa_arena *a = isa_arena_new((size_t)1 << 20);
    buffers_keep_their_bytes(a);
    buffers_keep_their_bytes(NULL);
    isa_arena_free(a);
}

/* One of the buffers the random mix below drives, with a heap copy of
 * what it must hold. */
typedef struct {
    isa_buf b;
    unsigned char *want;
    size_t n; /* bytes that must be kept */
} buf_model;

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* Reserve `bytes` in m, keeping what it holds up to there or (keep 0)
 * nothing, the rest written at random; 0 when the buffer lost a kept
 * byte or is short. */
static int model_reserve(buf_model *m, size_t bytes, int keep, uint64_t *x)
{
    const size_t from = !keep ? 0 : m->n < bytes ? m->n : bytes;
    unsigned char *p = isa_buf_reserve(&m->b, bytes, from);
    const int ok = m->b.cap >= bytes && (!from || !memcmp(p, m->want, from));
    m->want = realloc(m->want, bytes);
    for (size_t j = from; j < bytes; j++)
        p[j] = m->want[j] = (unsigned char)lcg(x);
    m->n = bytes;
    return ok;
}

/* Stream s (number i of the random mix) one instruction longer, or
 * (r 0) emptied. */
static void stream_step(isa_stream *s, int i, uint64_t r)
{
    if (!r) {
        isa_stream_free(s);
        return;
    }
    isa_insn *in = isa_stream_room(s);
    isa_insn_init(in, ISA_OP_LI);
    in->val = (int64_t)s->n * 4 + i;
    s->n++;
}

/* Stream i's instructions that are not what stream_step wrote. */
static long stream_bad(const isa_stream *s, int i)
{
    long bad = 0;
    for (size_t j = 0; j < s->n; j++)
        bad += s->insns[j].val != (int64_t)j * 4 + i;
    return bad;
}

/* Many buffers grown, emptied and grown again at random in a small arena
 * (its slots split, merged, taken and given back; full, so that buffers
 * move to the heap and back), beside one without an arena and two
 * streams growing in the same arena (as codegen's kernel streams grow
 * beside the rolling's scratch): no buffer's bytes change under another's
 * writes, and each keeps what it was asked to keep (a slot given out
 * twice, or one given back still in use, shows as another buffer's
 * bytes). */
static void test_buffers_sharing_an_arena_keep_their_bytes_at_random(void)
{
    isa_arena *a = isa_arena_new((size_t)2 << 20);
    enum { NB = 16 };
    buf_model m[NB];
    memset(m, 0, sizeof m);
    for (int i = 0; i < NB; i++)
        m[i].b.arena = i ? a : NULL;
    isa_stream st[2] = {{.arena = a}, {.arena = a}};
    uint64_t x = 1;
    long bad = 0, slots = 0, spills = 0; /* reserves that took a slot; that found the arena full */
    for (int step = 0; step < 3000; step++) {
        const uint64_t pick = lcg(&x) % (NB + 2), r = lcg(&x) % 8;
        buf_model *q = &m[pick % NB];
        if (pick >= NB) {
            stream_step(&st[pick - NB], (int)(pick - NB), r ? 1 : lcg(&x) % 50);
            slots += st[pick - NB].mapped == 2;
        } else if (r == 0) {
            isa_buf_free(&q->b);
            q->n = 0;
        } else {
            const size_t most = r < 4 ? 4096 : r < 7 ? 65536 : 400000; /* heap-sized, slot-sized, past the top */
            const size_t bytes = 1 + lcg(&x) % most, had = q->b.cap;
            bad += !model_reserve(q, bytes, r != 1, &x);
            slots += q->b.slot;
            spills += q->b.arena && !q->b.slot && bytes > had && bytes >= 8192 && bytes <= 300000;
        }
        if (step % 37 == 0) /* giving back free slots' memory must spare every slot in use */
            isa_arena_trim(a);
        for (int i = 0; i < NB; i++)
            bad += m[i].n && memcmp(m[i].b.p, m[i].want, m[i].n);
        bad += stream_bad(&st[0], 0) + stream_bad(&st[1], 1);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(!a || (slots > 500 && spills > 20)); /* (no arena under AddressSanitizer) */
    for (int i = 0; i < NB; i++) {
        isa_buf_free(&m[i].b);
        free(m[i].want);
    }
    isa_stream_free(&st[0]);
    isa_stream_free(&st[1]);
    isa_arena_free(a);
}

/* A buffer takes its size in whole 8 KB units, not a power of two, and
 * fits a run of free slots side by side that no aligned slot of its size
 * holds (the decode step's entries list, 302 KB, found no aligned 512 KB
 * below 4 MB and first touched a third huge page). */
static void test_a_buffer_fits_a_run_of_free_slots_no_aligned_slot_holds(void)
{
    isa_arena *a = isa_arena_new((size_t)2 << 20);
    if (!a)
        return; /* (no arena under AddressSanitizer) */
    enum { UNIT = 8192 };
    isa_buf b[4] = {{.arena = a}, {.arena = a}, {.arena = a}, {.arena = a}};
    for (int i = 0; i < 4; i++) /* four runs of 8 units, side by side from the arena's start */
        isa_buf_reserve(&b[i], 8 * UNIT, 0);
    for (int i = 1; i < 4; i++)
        CU_ASSERT_PTR_EQUAL((char *)b[i].p, (char *)b[0].p + (size_t)i * 8 * UNIT);
    isa_buf_free(&b[1]);
    isa_buf_free(&b[2]); /* units [8, 24) free: a run of 16 not aligned to 16 */
    isa_buf c = {.arena = a};
    isa_buf_reserve(&c, 15 * UNIT + 1, 0);
    CU_ASSERT_EQUAL(c.cap, (size_t)16 * UNIT);
    CU_ASSERT_PTR_EQUAL((char *)c.p, (char *)b[0].p + 8 * UNIT);
    isa_buf d = {.arena = a};
    isa_buf_reserve(&d, 3 * UNIT, 0); /* three units, not four: it starts where b[3] ends */
    CU_ASSERT_EQUAL(d.cap, (size_t)3 * UNIT);
    CU_ASSERT_PTR_EQUAL((char *)d.p, (char *)b[0].p + 32 * UNIT);
    isa_buf_free(&c);
    isa_buf_free(&d);
    isa_buf_free(&b[0]);
    isa_buf_free(&b[3]);
    isa_arena_free(a);
}

/* An arena another holder keeps stays mapped when the first lets go:
 * the program's code and the compile's tables share one. */
static void test_an_arena_lives_until_its_last_holder_lets_go(void)
{
    isa_arena *a = isa_arena_new((size_t)2 << 20);
    if (!a)
        return; /* (no arena under AddressSanitizer) */
    CU_ASSERT_PTR_EQUAL(isa_arena_keep(a), a);
    isa_buf b = {.arena = a};
    unsigned char *p = isa_buf_reserve(&b, 100000, 0);
    CU_ASSERT_EQUAL_FATAL(b.slot, 1);
    memset(p, 0x5a, 100000);
    isa_arena_free(a); /* one holder left */
    isa_arena_trim(a);
    CU_ASSERT_EQUAL(p[0], 0x5a);
    CU_ASSERT_EQUAL(p[99999], 0x5a);
    isa_buf_free(&b);
    isa_arena_free(a);
}

static void test_parse_reads_addresses_flags_and_enums(void)
{
    isa_insn in;
    char err[256];
    int rc = isa_parse_insn("pt.mm c=1 f=acc|f32 d=r3+0x100 a=0x2000 b=r15 m=8 n=16 k=64 ds=-128", &in, err,
                            sizeof err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(in.op, ISA_OP_PT_MM);
    CU_ASSERT_EQUAL(in.c, 1);
    CU_ASSERT_EQUAL(in.flags, ISA_F_ACC | ISA_F_F32);
    CU_ASSERT_EQUAL(in.d.reg, 3);
    CU_ASSERT_EQUAL(in.d.off, 0x100);
    CU_ASSERT_EQUAL(in.a.reg, 0);
    CU_ASSERT_EQUAL(in.a.off, 0x2000);
    CU_ASSERT_EQUAL(in.b.reg, 15);
    CU_ASSERT_EQUAL(in.b.off, 0);
    CU_ASSERT_EQUAL(in.m, 8);
    CU_ASSERT_EQUAL(in.nn, 16);
    CU_ASSERT_EQUAL(in.k, 64);
    CU_ASSERT_EQUAL(in.ds[0], -128);
    CU_ASSERT_EQUAL(isa_insn_unit(&in), ISA_U_PT1);
    rc = isa_parse_insn("sig u=sfp0 t=3", &in, err, sizeof err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(in.u, ISA_U_SFP0);
    CU_ASSERT_EQUAL(in.tok, 3);
    CU_ASSERT_EQUAL(isa_insn_unit(&in), ISA_U_SFP0);
}

static void test_fence_is_a_sequencer_instruction_without_operands(void)
{
    isa_insn in;
    char err[256], text[64];
    CU_ASSERT_EQUAL_FATAL(isa_parse_insn("fence", &in, err, sizeof err), 0);
    CU_ASSERT_EQUAL(in.op, ISA_OP_FENCE);
    CU_ASSERT_EQUAL(isa_insn_unit(&in), ISA_U_SEQ);
    CU_ASSERT_EQUAL(isa_info(ISA_OP_FENCE)->noperands, 0);
    uint8_t w[ISA_INSN_BYTES], zero[ISA_INSN_BYTES - 1] = {0};
    CU_ASSERT_EQUAL_FATAL(isa_encode(&in, w, err, sizeof err), 0);
    CU_ASSERT_EQUAL(w[0], 0x07);
    CU_ASSERT_EQUAL(memcmp(w + 1, zero, sizeof zero), 0);
    isa_format_insn(&in, text, sizeof text);
    CU_ASSERT_STRING_EQUAL(text, "fence");
    CU_ASSERT_EQUAL(isa_parse_insn("fence u=dmai", &in, err, sizeof err), -1);
}

/* ---- DL16 ---- */

static void test_dl16_every_pattern_round_trips_through_f32(void)
{
    static float bulk[65536];
    static uint16_t all[65536];
    for (uint32_t h = 0; h < 65536; h++)
        all[h] = (uint16_t)h;
    isa_dl16_to_f32_n(all, bulk, 65536);
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = isa_dl16_to_f32((uint16_t)h);
        if ((h & 0x7fffu) == ISA_DL16_NINF) {
            bad += !isnan(f) || !isnan(bulk[h]);
            continue;
        }
        uint32_t fb, bb;
        memcpy(&fb, &f, 4);
        memcpy(&bb, &bulk[h], 4);
        bad += isnan(f) || isinf(f) || fb != bb;
        bad += isa_dl16_from_f32(f) != h; /* zero and -0 map to themselves too */
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(isa_dl16_to_f32(0x0000), 0.0f);
    CU_ASSERT(signbit(isa_dl16_to_f32(0x8000)));
    CU_ASSERT_EQUAL(isa_dl16_to_f32(0x3e00), 1.0f); /* biased exponent 31, fraction 0 */
    CU_ASSERT_EQUAL(isa_dl16_to_f32(0xc000), -2.0f);
}

/* The AVX2 path of the bulk conversion to fp32 (taken when the host has
 * AVX2) gives the baseline's bits: every DL16 pattern, at every start
 * offset mod 16 and in lengths that leave every tail. */
static void test_dl16_avx2_and_baseline_paths_give_the_same_bits(void)
{
    static uint16_t all[65536 + 16];
    static float fast[65536], base[65536];
    for (uint32_t h = 0; h < 65536 + 16; h++)
        all[h] = (uint16_t)(h * 40503u); /* odd: every pattern, shuffled */
    int bad = 0;
    for (size_t off = 0; off < 16; off++) {
        size_t n = 65536 - off * 7;
        int had = isa_dl16_use_avx2(1);
        isa_dl16_to_f32_n(all + off, fast, n);
        CU_ASSERT_EQUAL(isa_dl16_use_avx2(0), 0);
        isa_dl16_to_f32_n(all + off, base, n);
        isa_dl16_use_avx2(had);
        bad += memcmp(fast, base, n * sizeof *fast) != 0;
    }
    CU_ASSERT_EQUAL(bad, 0);
    isa_dl16_use_avx2(1);
}

/* The conversion of rows (the PT workers' operand tiles: rows of one
 * stick's lanes in LX to a wider fp32 matrix) puts each row where its
 * pitches say, with the scalar rule's bits, and leaves the gaps between
 * rows alone: pitches wider than a row (every tail length), and equal to
 * it (converted as one run). */
static void test_dl16_rows_land_at_their_pitches_with_the_scalar_bits(void)
{
    enum { ROWS = 9, IN_PITCH = 64, OUT_PITCH = 200 };
    static uint16_t in[ROWS * OUT_PITCH];
    static float out[ROWS * OUT_PITCH];
    for (size_t i = 0; i < ROWS * OUT_PITCH; i++)
        in[i] = (uint16_t)(i * 40503u + 7);
    int bad = 0;
    for (size_t n = 1; n <= IN_PITCH; n++) {
        for (size_t i = 0; i < ROWS * OUT_PITCH; i++)
            out[i] = -12345.0f; /* a value no DL16 converts to: gaps keep it */
        isa_dl16_to_f32_rows(in, IN_PITCH, out, OUT_PITCH, ROWS, n);
        for (size_t r = 0; r < ROWS; r++)
            for (size_t c = 0; c < OUT_PITCH; c++) {
                float want = c < n ? isa_dl16_to_f32(in[r * IN_PITCH + c]) : -12345.0f;
                float got = out[r * OUT_PITCH + c];
                bad += memcmp(&want, &got, 4) != 0 && !(isnan(want) && isnan(got));
            }
    }
    isa_dl16_to_f32_rows(in, 48, out, 48, ROWS, 48); /* pitch = row: one run over all */
    for (size_t i = 0; i < ROWS * 48; i++) {
        float want = isa_dl16_to_f32(in[i]);
        bad += memcmp(&want, &out[i], 4) != 0 && !(isnan(want) && isnan(out[i]));
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* The bulk conversion to DL16 (vectorised: AVX2 when the host has it,
 * and the SSE2 baseline) gives the scalar one's bits: over a sweep of
 * fp32 patterns (a prime stride through all 2^32, every sign, exponent and
 * NaN among them) and every rounding boundary (each DL16 value's midpoint
 * to the next, and one fp32 step either side), in lengths that leave
 * every tail of 16.  (Checked once over all 2^32 patterns too: 15 s, too
 * slow for the suite.) */
static void test_dl16_bulk_rounding_matches_the_scalar_rule(void)
{
    enum { N = 4099 };
    static float in[3 * 65536];
    static uint16_t out[3 * 65536];
    size_t n = 0;
    for (uint64_t u = 0; u < (1ull << 32) && n < sizeof in / sizeof in[0]; u += 1048573) {
        uint32_t b = (uint32_t)u;
        memcpy(&in[n++], &b, 4);
    }
    for (uint32_t h = 0; h < 65536 && n + 3 <= sizeof in / sizeof in[0]; h += 2) {
        uint32_t mid = ((uint32_t)(h & 0x8000u) << 16) | (((h & 0x7fffu) + (96u << 9)) << 14 | 1u << 13);
        for (int d = -1; d <= 1; d++) {
            uint32_t b = mid + (uint32_t)d;
            memcpy(&in[n++], &b, 4);
        }
    }
    int bad = 0, had = isa_dl16_use_avx2(1);
    for (int avx2 = had; avx2 >= 0; avx2--) {
        isa_dl16_use_avx2(avx2);
        for (size_t off = 0, len = N; off + N <= n; off += N - 3, len = len > N - 15 ? len - 1 : N) {
            isa_dl16_from_f32_n(in + off, out, len);
            for (size_t i = 0; i < len; i++)
                bad += out[i] != isa_dl16_from_f32(in[off + i]);
        }
    }
    isa_dl16_use_avx2(had);
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_dl16_check_value(void)
{
    CU_ASSERT_EQUAL(isa_dl16_from_f32(0.0123456789f), 12585);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(-0.0123456789f), 12585 | 0x8000);
}

static void test_dl16_rounds_ties_away_from_zero(void)
{
    /* 1 + 2^-10 lies halfway between 1 (0x3e00) and 1 + 2^-9 (0x3e01);
     * ties-to-even would give 0x3e00. */
    float half = 1.0f + ldexpf(1.0f, -10);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(half), 0x3e01);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(-half), 0xbe01);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(nextafterf(half, 0.0f)), 0x3e00);
    CU_ASSERT_EQUAL(isa_dl16_round(half), 1.0f + ldexpf(1.0f, -9));
    /* halfway with a fraction carry into the exponent: 2 - 2^-10 -> 2.0 */
    CU_ASSERT_EQUAL(isa_dl16_from_f32(2.0f - ldexpf(1.0f, -10)), 0x4000);
    CU_ASSERT_EQUAL(isa_dl16_round(0.1f), 0.0999755859375f); /* 1.599609375 * 2^-4 */
}

static void test_dl16_values_beyond_the_largest_finite_are_ninf(void)
{
    float maxf = ldexpf(1.0f + 510.0f / 512.0f, 32); /* exponent 63, fraction 510 */
    CU_ASSERT_EQUAL(isa_dl16_from_f32(maxf), 0x7ffe);
    CU_ASSERT_EQUAL(isa_dl16_to_f32(0x7ffe), maxf);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(-maxf), 0xfffe);
    /* halfway to the (NINF) next pattern rounds away from zero, into NINF */
    float halfway = ldexpf(1.0f + 510.5f / 512.0f, 32);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(nextafterf(halfway, 0.0f)), 0x7ffe);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(halfway), 0x7fff);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(ldexpf(1.0f, 33)), 0x7fff);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(-ldexpf(1.0f, 33)), 0xffff);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(3.0e38f), 0x7fff);
}

static void test_dl16_inf_and_nan_become_ninf(void)
{
    CU_ASSERT_EQUAL(isa_dl16_from_f32(INFINITY), 0x7fff);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(-INFINITY), 0xffff);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(NAN) & 0x7fffu, ISA_DL16_NINF);
    CU_ASSERT(isnan(isa_dl16_to_f32(0x7fff)));
    CU_ASSERT(isnan(isa_dl16_to_f32(0xffff)));
    CU_ASSERT(isnan(isa_dl16_round(INFINITY)));
}

static void test_dl16_tiny_values_flush_to_signed_zero(void)
{
    float smallest = isa_dl16_to_f32(0x0001); /* 2^-31 * (1 + 2^-9) */
    CU_ASSERT_EQUAL(smallest, ldexpf(1.0f + 1.0f / 512.0f, -31));
    CU_ASSERT_EQUAL(isa_dl16_from_f32(smallest), 0x0001);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(1.0e-12f), 0x0000);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(-1.0e-12f), 0x8000);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(ldexpf(1.0f, -40)), 0x0000);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(1.0e-45f), 0x0000); /* fp32 subnormal */
    CU_ASSERT_EQUAL(isa_dl16_from_f32(-0.0f), 0x8000);
    CU_ASSERT_EQUAL(isa_dl16_from_f32(0.0f), 0x0000);
}

static void test_dl16_bulk_conversion_matches_scalar(void)
{
    float in[6] = {0.0f, -1.5f, 3.14159f, 1.0e-12f, 65504.0f, INFINITY};
    uint16_t out[6];
    isa_dl16_from_f32_n(in, out, 6);
    for (int i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(out[i], isa_dl16_from_f32(in[i]));
}

/* ---- IEEE half ---- */

static void test_f16_known_values(void)
{
    CU_ASSERT_EQUAL(isa_f16_from_f32(1.0f), 0x3c00);
    CU_ASSERT_EQUAL(isa_f16_to_f32(0x3c00), 1.0f);
    CU_ASSERT_EQUAL(isa_f16_from_f32(-2.0f), 0xc000);
    CU_ASSERT_EQUAL(isa_f16_to_f32(0xc000), -2.0f);
    CU_ASSERT_EQUAL(isa_f16_from_f32(65504.0f), 0x7bff);
    CU_ASSERT_EQUAL(isa_f16_to_f32(0x7bff), 65504.0f);
    CU_ASSERT_EQUAL(isa_f16_from_f32(65520.0f), 0x7c00); /* rounds past the largest: inf */
    CU_ASSERT_EQUAL(isa_f16_to_f32(0x0001), ldexpf(1.0f, -24)); /* smallest subnormal */
    CU_ASSERT_EQUAL(isa_f16_from_f32(ldexpf(1.0f, -24)), 0x0001);
    CU_ASSERT_EQUAL(isa_f16_to_f32(0x0400), ldexpf(1.0f, -14)); /* smallest normal */
    CU_ASSERT_EQUAL(isa_f16_from_f32(ldexpf(1.0f, -26)), 0x0000);
    CU_ASSERT_EQUAL(isa_f16_from_f32(INFINITY), 0x7c00);
    CU_ASSERT(isinf(isa_f16_to_f32(0xfc00)) && isa_f16_to_f32(0xfc00) < 0);
    CU_ASSERT(isnan(isa_f16_to_f32(isa_f16_from_f32(NAN))));
    /* ties to even: 1 + 2^-11 is halfway between 0x3c00 and 0x3c01 */
    CU_ASSERT_EQUAL(isa_f16_from_f32(1.0f + ldexpf(1.0f, -11)), 0x3c00);
}

static void test_bf16_known_values(void)
{
    CU_ASSERT_EQUAL(isa_bf16_from_f32(1.0f), 0x3f80);
    CU_ASSERT_EQUAL(isa_bf16_to_f32(0xc120), -10.0f);
    /* PyTorch's values: 18.09375 -> 18.125, 4.828125 (a tie) -> 4.8125 */
    CU_ASSERT_EQUAL(isa_bf16_to_f32(isa_bf16_from_f32(18.09375f)), 18.125f);
    CU_ASSERT_EQUAL(isa_bf16_to_f32(isa_bf16_from_f32(4.828125f)), 4.8125f);
    CU_ASSERT_EQUAL(isa_bf16_from_f32(3.4e38f), 0x7f80); /* rounds past the largest: inf */
    CU_ASSERT(isnan(isa_bf16_to_f32(isa_bf16_from_f32(NAN))));
    CU_ASSERT_EQUAL(isa_host_round(ISA_HT_F16, 65520.0f), INFINITY);
    CU_ASSERT_EQUAL(isa_host_round(ISA_HT_F32, 0.1f), 0.1f);
}

/* The device's narrowing of a DL16 value to a 16-bit host dtype (torch-spyre
 * issue 2478): toward zero; fp16 overflows to infinity (assumed). */
static void test_device_values_narrow_toward_zero_into_16_bit_host_dtypes(void)
{
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_BF16, 18.09375f), 18.0f);
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_BF16, -18.09375f), -18.0f);
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_BF16, 0x1p30f), 0x1p30f);
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_F16, 18.09375f), 18.09375f); /* DL16 fits fp16 */
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_F16, 65472.0f), 65472.0f);
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_F16, 65536.0f), INFINITY);
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_F16, -0x1p30f), -INFINITY);
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_F16, 20.75f * 0x1p-24f), 20.0f * 0x1p-24f);
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_F16, 0x1p-26f), 0.0f);
    CU_ASSERT(isnan(isa_host_from_device(ISA_HT_BF16, NAN)) && isnan(isa_host_from_device(ISA_HT_F16, NAN)));
    CU_ASSERT_EQUAL(isa_host_from_device(ISA_HT_F32, 18.09375f), 18.09375f);
    /* units in the last place: bf16 7 fraction bits, fp16 10 (subnormals 2^-24) */
    CU_ASSERT_EQUAL(isa_host_ulp(ISA_HT_BF16, 18.09375), 0.125);
    CU_ASSERT_EQUAL(isa_host_ulp(ISA_HT_BF16, -1.0), 0x1p-7);
    CU_ASSERT_EQUAL(isa_host_ulp(ISA_HT_F16, 1.5), 0x1p-10);
    CU_ASSERT_EQUAL(isa_host_ulp(ISA_HT_F16, 0.0), 0x1p-24);
    CU_ASSERT_EQUAL(isa_host_ulp(ISA_HT_F16, 0x1p-20), 0x1p-24);
    CU_ASSERT_EQUAL(isa_host_ulp(ISA_HT_F32, 1.0), 0.0);
}

/* ---- the user documentation follows the table ---- */

static void test_docs_list_every_instruction_with_its_opcode_and_format(void)
{
    static const char *const fmt_names[] = {
#define F(id) #id,
        ISA_FORMATS(F)
#undef F
    };
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/isa.md", SPYRE_SOURCE_DIR);
    char *doc = tu_read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    int rows = 0;
    for (const char *s = doc; (s = strstr(s, "\n| `")) != NULL; s++)
        rows += strstr(s, "` | 0x") == strchr(s + 4, '`'); /* an instruction-table row */
    CU_ASSERT_EQUAL(rows, ISA_NOPS);
    for (int op = 0; op < ISA_NOPS; op++) {
        const isa_opinfo *info = isa_info(op);
        char row[128];
        snprintf(row, sizeof row, "\n| `%s` | 0x%02x | %s |", info->mnemonic, info->opcode, fmt_names[info->format]);
        if (!strstr(doc, row))
            fprintf(stderr, "docs/isa.md lacks the row '%s'\n", row + 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(doc, row));
    }
    free(doc);
}

/* ---- files (isa/file.c) ---- */

/* err is "PATH: not a regular file" */
static void assert_not_regular(const char *path, const char *err)
{
    char want[1200];
    snprintf(want, sizeof want, "%s: not a regular file", path);
    CU_ASSERT_STRING_EQUAL(err, want);
}

static void test_fifo_device_and_directory_are_refused_before_reading(void)
{
    char dir[1024], fifo[1100], err[1200];
    tu_tmpdir(dir, sizeof dir);
    tu_fifo(dir, "fifo", fifo, sizeof fifo);
    size_t n;
    alarm(10); /* a blocking open or read would hang: fail instead */
    CU_ASSERT_PTR_NULL(isa_file_read(fifo, 1 << 20, &n, err, sizeof err));
    assert_not_regular(fifo, err);
    CU_ASSERT_PTR_NULL(isa_text_read("/dev/zero", 1 << 20, err, sizeof err));
    assert_not_regular("/dev/zero", err);
    CU_ASSERT_PTR_NULL(isa_text_read(dir, 1 << 20, err, sizeof err));
    assert_not_regular(dir, err);
    alarm(0);
    tu_rmtree(dir);
}

static void test_a_file_over_its_cap_is_refused(void)
{
    char path[1024], err[1200];
    tu_tmpfile(".txt", path, sizeof path);
    char buf[100];
    memset(buf, 'x', sizeof buf);
    tu_write_file(path, buf, sizeof buf);
    size_t n = 0;
    CU_ASSERT_PTR_NULL(isa_file_read(path, 99, &n, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ": 100 bytes, more than the 99"));
    char *text = isa_file_read(path, 100, &n, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_EQUAL(n, 100);
    CU_ASSERT_EQUAL(text[100], 0);
    free(text);
    remove(path);
}

static void test_a_nul_byte_in_a_text_file_names_its_line(void)
{
    char path[1024], err[1200], want[1200];
    tu_write_tmpfile(".txt", "one\ntwo\nth\0ree\nfour\n", 20, path, sizeof path);
    CU_ASSERT_PTR_NULL(isa_text_read(path, 1 << 20, err, sizeof err));
    snprintf(want, sizeof want, "%s:3: a NUL byte in the text", path);
    CU_ASSERT_STRING_EQUAL(err, want);
    remove(path);
}

static void test_text_lines_of_any_length(void)
{
    size_t n = 100000;
    char *text = malloc(n + 16);
    memset(text, 'a', n);
    strcpy(text + n, "\nlast");
    char *cur = text, *line = isa_text_line(&cur);
    CU_ASSERT_EQUAL(strlen(line), n);
    CU_ASSERT_STRING_EQUAL(isa_text_line(&cur), "last");
    CU_ASSERT_PTR_NULL(isa_text_line(&cur));
    free(text);
}

/* The names in dir, sorted, each followed by a space, are want. */
static void expect_dir_holds(const char *dir, const char *want)
{
    char cmd[1200], names[256];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | tr '\\n' ' '", dir);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(names, 1, sizeof names - 1, p) : 0;
    names[n] = 0;
    if (p)
        pclose(p);
    CU_ASSERT_STRING_EQUAL(names, want);
}

static void test_an_output_replaces_its_file_only_when_complete(void)
{
    char dir[1024], path[1100], err[1200];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    tu_write_file(path, "old\n", 4);
    CU_ASSERT_EQUAL(chmod(path, 0640), 0);
    isa_outfile o;
    CU_ASSERT_EQUAL_FATAL(isa_out_open(&o, path, err, sizeof err), 0);
    fputs("half", o.f);
    CU_ASSERT_EQUAL(isa_out_close(&o, 0, err, sizeof err), -1); /* a failed run */
    size_t n;
    char *text = isa_file_read(path, 100, &n, err, sizeof err);
    CU_ASSERT_STRING_EQUAL(text, "old\n");
    free(text);
    expect_dir_holds(dir, "out.txt "); /* no temporary left */

    CU_ASSERT_EQUAL_FATAL(isa_out_open(&o, path, err, sizeof err), 0);
    fputs("new\n", o.f);
    CU_ASSERT_EQUAL(isa_out_close(&o, 1, err, sizeof err), 0);
    text = isa_file_read(path, 100, &n, err, sizeof err);
    CU_ASSERT_STRING_EQUAL(text, "new\n");
    free(text);
    struct stat st;
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0640); /* the old file's mode */
    expect_dir_holds(dir, "out.txt ");
    tu_rmtree(dir);
}

static void test_an_output_that_cannot_be_made_touches_nothing(void)
{
    char dir[1024], path[1100], err[1200];
    tu_tmpdir(dir, sizeof dir);
    isa_outfile o;
    CU_ASSERT_EQUAL(isa_out_open(&o, dir, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ": is a directory"));
    snprintf(path, sizeof path, "%s/missing/out.txt", dir);
    CU_ASSERT_EQUAL(isa_out_open(&o, path, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "missing/out.txt: cannot create: No such file or directory"));
    expect_dir_holds(dir, "");
    tu_rmtree(dir);
}

static void test_an_output_through_a_symlink_replaces_its_target(void)
{
    char dir[1024], path[1100], link[1100], err[1200];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/target", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    tu_write_file(path, "old", 3);
    CU_ASSERT_EQUAL_FATAL(symlink("target", link), 0);
    isa_outfile o;
    CU_ASSERT_EQUAL_FATAL(isa_out_open(&o, link, err, sizeof err), 0);
    fputs("new", o.f);
    CU_ASSERT_EQUAL(isa_out_close(&o, 1, err, sizeof err), 0);
    struct stat st;
    CU_ASSERT_EQUAL(lstat(link, &st), 0);
    CU_ASSERT_TRUE(S_ISLNK(st.st_mode));
    size_t n;
    char *text = isa_file_read(path, 100, &n, err, sizeof err);
    CU_ASSERT_STRING_EQUAL(text, "new");
    free(text);
    tu_rmtree(dir);
}

/* A FIFO (like a device) is written in place and stays a FIFO. */
static void test_an_output_to_a_fifo_is_written_in_place(void)
{
    char dir[1024], fifo[1100], err[1200];
    tu_tmpdir(dir, sizeof dir);
    tu_fifo(dir, "fifo", fifo, sizeof fifo);
    alarm(10);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader, so the writer's open does not wait */
    CU_ASSERT_FATAL(rd >= 0);
    isa_outfile o;
    CU_ASSERT_EQUAL_FATAL(isa_out_open(&o, fifo, err, sizeof err), 0);
    fputs("through the pipe", o.f);
    CU_ASSERT_EQUAL(isa_out_close(&o, 1, err, sizeof err), 0);
    char buf[64] = "";
    CU_ASSERT_EQUAL(read(rd, buf, sizeof buf - 1), 16);
    CU_ASSERT_STRING_EQUAL(buf, "through the pipe");
    close(rd);
    alarm(0);
    struct stat st;
    CU_ASSERT_EQUAL(lstat(fifo, &st), 0);
    CU_ASSERT_TRUE(S_ISFIFO(st.st_mode));
    tu_rmtree(dir);
}

/* A name of 250 bytes is legal; its temporary must be too. */
static void test_an_output_with_a_long_name(void)
{
    char dir[1024], path[1400], err[1600];
    tu_tmpdir(dir, sizeof dir);
    int n = snprintf(path, sizeof path, "%s/", dir);
    memset(path + n, 'n', 250);
    path[n + 250] = 0;
    isa_outfile o;
    CU_ASSERT_EQUAL_FATAL(isa_out_open(&o, path, err, sizeof err), 0);
    fputs("x", o.f);
    CU_ASSERT_EQUAL(isa_out_close(&o, 1, err, sizeof err), 0);
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
    tu_rmtree(dir);
}

static void test_path_join(void)
{
    char *p = isa_path_join("dir", "name");
    CU_ASSERT_STRING_EQUAL(p, "dir/name");
    free(p);
    p = isa_path_join("dir", "/abs");
    CU_ASSERT_STRING_EQUAL(p, "/abs");
    free(p);
    p = isa_path_join(NULL, "rel");
    CU_ASSERT_STRING_EQUAL(p, "rel");
    free(p);
    char long_dir[3000];
    memset(long_dir, 'd', sizeof long_dir - 1);
    long_dir[sizeof long_dir - 1] = 0;
    p = isa_path_join(long_dir, "x");
    CU_ASSERT_EQUAL(strlen(p), sizeof long_dir + 1);
    free(p);
}

int main(void)
{
    static const tu_test tests[] = {
        {"fence is a sequencer instruction without operands", test_fence_is_a_sequencer_instruction_without_operands},
        {"every instruction encodes, decodes, formats and parses back",
         test_every_instruction_encodes_decodes_formats_and_parses_back},
        {"an instruction at its defaults formats as the bare mnemonic", test_default_instruction_formats_as_bare_mnemonic},
        {"a wait or sig is its default with unit and token set",
         test_a_token_instruction_is_its_default_with_unit_and_token},
        {"no two opcodes or mnemonics collide", test_opcodes_and_mnemonics_are_unique},
        {"every format fits the 512-bit word", test_every_format_fits_the_instruction_word},
        {"an unknown opcode fails to decode", test_unknown_opcode_fails_to_decode},
        {"stray bits past the last operand fail to decode", test_stray_bits_past_the_last_operand_fail_to_decode},
        {"out-of-range operands fail to encode, naming the operand",
         test_out_of_range_operands_fail_to_encode_naming_the_operand},
        {"the largest legal operands encode", test_largest_legal_operands_encode},
        {"every operand fits exactly its range", test_every_operand_fits_exactly_its_range},
        {"a count or stride past its field is refused", test_a_count_or_stride_past_its_field_is_refused},
        {"the address check names a bad address and ignores other operands",
         test_address_check_names_a_bad_address_and_ignores_other_operands},
        {"parse errors name the problem", test_parse_errors_name_the_problem},
        {"parse refuses a value a narrow field would wrap", test_parse_refuses_a_value_a_narrow_field_would_wrap},
        {"an address past its fields is refused", test_an_address_past_its_fields_is_refused},
        {"a growing stream keeps its instructions", test_a_growing_stream_keeps_its_instructions},
        {"streams growing in an arena keep their instructions", test_streams_growing_in_an_arena_keep_their_instructions},
        {"a stream reserved ahead keeps its instructions", test_a_stream_reserved_ahead_keeps_its_instructions},
        {"buffers in an arena keep their bytes", test_buffers_in_an_arena_keep_their_bytes},
        {"buffers sharing an arena keep their bytes at random", test_buffers_sharing_an_arena_keep_their_bytes_at_random},
        {"a buffer fits a run of free slots no aligned slot holds", test_a_buffer_fits_a_run_of_free_slots_no_aligned_slot_holds},
        {"an arena lives until its last holder lets go", test_an_arena_lives_until_its_last_holder_lets_go},
        {"parse reads addresses, flags and enums", test_parse_reads_addresses_flags_and_enums},
        {"parse reads a long flag list to its end", test_parse_reads_a_long_flag_list_to_its_end},
        {"DL16: every pattern round-trips through fp32", test_dl16_every_pattern_round_trips_through_f32},
        {"DL16: bulk rounding matches the scalar rule", test_dl16_bulk_rounding_matches_the_scalar_rule},
        {"DL16: AVX2 and baseline paths give the same bits", test_dl16_avx2_and_baseline_paths_give_the_same_bits},
        {"DL16: rows land at their pitches with the scalar bits", test_dl16_rows_land_at_their_pitches_with_the_scalar_bits},
        {"DL16: check value 0.0123456789 -> 12585", test_dl16_check_value},
        {"DL16: rounding ties away from zero", test_dl16_rounds_ties_away_from_zero},
        {"DL16: beyond the largest finite is NINF", test_dl16_values_beyond_the_largest_finite_are_ninf},
        {"DL16: inf and NaN become NINF", test_dl16_inf_and_nan_become_ninf},
        {"DL16: tiny values flush to signed zero", test_dl16_tiny_values_flush_to_signed_zero},
        {"DL16: bulk conversion matches scalar", test_dl16_bulk_conversion_matches_scalar},
        {"f16: known values", test_f16_known_values},
        {"bf16: known values", test_bf16_known_values},
        {"device values narrow toward zero into 16-bit host dtypes",
         test_device_values_narrow_toward_zero_into_16_bit_host_dtypes},
        {"docs/isa.md lists every instruction with its opcode and format",
         test_docs_list_every_instruction_with_its_opcode_and_format},
        {"a FIFO, a device and a directory are refused before reading",
         test_fifo_device_and_directory_are_refused_before_reading},
        {"a file over its cap is refused", test_a_file_over_its_cap_is_refused},
        {"a NUL byte in a text file names its line", test_a_nul_byte_in_a_text_file_names_its_line},
        {"text lines of any length", test_text_lines_of_any_length},
        {"an output replaces its file only when complete", test_an_output_replaces_its_file_only_when_complete},
        {"an output that cannot be made touches nothing", test_an_output_that_cannot_be_made_touches_nothing},
        {"an output through a symlink replaces its target", test_an_output_through_a_symlink_replaces_its_target},
        {"an output to a FIFO is written in place", test_an_output_to_a_fifo_is_written_in_place},
        {"an output with a 250-byte name", test_an_output_with_a_long_name},
        {"paths of any length are joined", test_path_join},
        {NULL, NULL},
    };
    return tu_run("isa", tests);
}
