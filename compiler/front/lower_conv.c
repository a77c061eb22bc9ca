/* lower_conv.c: the `lower` pass's convolutions, as implicit GEMMs
 * (l_convolution, registered in lower.c's table). */
#include "lower_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- Convolution ----
 *
 * convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)
 * as an implicit GEMM on the PT units (docs/compiler.md, "Convolution").
 * The input is copied once, padded and channels-last: xp[n, hp, wp, c]
 * (input-sized; the copy is the transposition the PT needs anyway, A
 * sticked on K = channels).  Then every tap (kh, kw) is one MATMUL over
 * batch (n, g, oh), m = ow, n = co (in the group), k = ci (in the group):
 *   A = xp[n, oh*s + kh*d, ow*s + kw*d, g*CIg + ci]   (affine, sticks on ci)
 *   B = w[g*COg + co, ci, kh, kw]                    (a weight sticked on co)
 * and each tap's product is added to the sum of the taps before it (an
 * epilogue, as addmm's bias), into y[n, oh, ow, co] (channels-last).
 * The last tap adds the bias.  The result is y seen as (n, co, oh, ow),
 * a view: a following conv's padded copy reads y along the channels.
 * With stride 1 and Wp > OW, (oh, ow) is one loop m over oh*Wp + ow: A's index is
 * still affine (m*C), the product has M = OH*Wp rows instead of a batch of
 * OH products of OW rows, and y is Wp wide, its columns past OW never read
 * (xp has one more row of zeros, so the last row's taps stay inside it). */
typedef struct {
    int64_t n, cin, cout, g, h, w, kh, kw, oh, ow, hp, wp;
    int merged;               /* (oh, ow) is one loop */
    int64_t yw;               /* y's width: ow, or wp when merged */
    int64_t cs[2];            /* xp's pixel i is padded x's i*cs: a 1x1 conv's stride is the copy's */
    int64_t kwf;              /* kw taps folded into one product's K (kw, ci): KW or 1 */
    int64_t kc;               /* every tap in one K (kh, kw, ci) through an im2col copy, or 0 */
    int chan;                 /* that K is (ci, kh, kw) instead, each channel's taps padded to whole sticks */
    int64_t s[2], p[2], d[2]; /* H then W */
    int nsp;                  /* spatial dims of the op: 1 or 2 */
    int64_t c0;               /* the first input channel of this K block (cin of them) */
    int kblocks;              /* the conv runs as K blocks (conv_kblock) */
    int64_t bdg;              /* > 1: the groups run as one product over a block-diagonal weight (conv_blockdiag) */
} convshape;

/* One of stride, padding, dilation: a list of nsp ints (or one for all). */
static void conv_ints(lctx *c, int pos, const char *key, int nsp, int64_t dflt, int64_t *out2)
{
    int64_t v[GR_MAX_RANK];
    const gr_arg *a = arg(c, pos, key);
    int cnt = a && a->kind != GR_ARG_NONE ? ints(c, pos, key, v) : 0;
    if (cnt != 0 && cnt != 1 && cnt != nsp)
        fail(c, "argument %s must have %d values", key, nsp);
    out2[0] = out2[1] = dflt;
    for (int i = 0; i < nsp && cnt; i++)
        out2[2 - nsp + i] = v[cnt == 1 ? 0 : i];
}

/* Fold a row of kw taps into one product only for a weight of at most
 * this many times the input's elements (conv_shape). */
#define CONV_FOLD_MAX_WEIGHT 8
/* An im2col copy (conv_shape) for few input channels only for a K of at
 * most IR_IM2COL_MAX_K (4 sticks; each row of kw taps is then padded to whole sticks
 * of CONV_IM2COL_ROW); else only of at most this many times the input's
 * elements (a stride-2 3x3 conv's is 2.25 times) */
#define CONV_IM2COL_MAX_GROWTH 4
#define CONV_IM2COL_ROW IR_STICK_LANES
#define CONV_IM2COL_MAX_PADDED_ROW 1024
#define CONV_ROWS_FIRST_MAX_C 16

/* K of an im2col copy over (ci, kh, kw): each channel's kh*kw taps padded
 * to whole sticks of CONV_IM2COL_ROW elements. */
static int64_t conv_kc_chan(const convshape *s)
{
    return s->cin * ((s->kh * s->kw + CONV_IM2COL_ROW - 1) / CONV_IM2COL_ROW * CONV_IM2COL_ROW);
}

/* One input and one output channel per group (conv_depthwise). */
static int conv_is_depthwise(const convshape *s)
{
    return s->g > 1 && s->g == s->cin && s->cout == s->cin;
}

/* Grouped convs of at most this many input channels run as one product
 * over a block-diagonal weight (conv_blockdiag). */
#define CONV_BLOCKDIAG_MAX_C 256

/* Does a grouped conv (not depthwise) run as one group, its weight
 * expanded to [C_out, C_in] per tap with zeros off the groups' blocks
 * (conv_blockdiag_weight)?  Only where groups part a stick: per group,
 * products of C/G channels (8 for 64 in 8 groups) shared each output stick
 * between groups, whose store staged all of y in LX ("no block of the
 * product fits" from a batch of 16 at 28x28).  K grows G times: groups of
 * whole sticks keep their own products (256 channels in 2 groups at 14x14:
 * 89,137 cycles per group, 98,118 block-diagonal; spyre-4core 109,842 and
 * 186,567). */
static int conv_blockdiag(const lctx *c, const convshape *s)
{
    const chip_config *cfg = c->p->opts.target;
    if (!cfg || s->g == 1 || conv_is_depthwise(s) || s->cin > CONV_BLOCKDIAG_MAX_C)
        return 0;
    const int64_t lanes = cfg->stick_bytes / 2;
    return (s->cin / s->g) % lanes || (s->cout / s->g) % lanes;
}

static convshape conv_shape(lctx *c, const gr_ttype *xt, const gr_ttype *wt)
{
    convshape s;
    memset(&s, 0, sizeof s);
    s.nsp = xt->rank - 2;
    if ((s.nsp != 1 && s.nsp != 2) || wt->rank != xt->rank)
        fail(c, "lowers 1-D and 2-D convolutions of a batched input only");
    if (num(c, 6, "transposed", 0))
        fail(c, "does not lower a transposed convolution");
    s.g = (int64_t)num(c, 8, "groups", 1);
    s.n = xt->shape[0];
    s.cin = xt->shape[1];
    s.cout = wt->shape[0];
    s.h = s.nsp == 2 ? xt->shape[2] : 1;
    s.w = xt->shape[xt->rank - 1];
    s.kh = s.nsp == 2 ? wt->shape[2] : 1;
    s.kw = wt->shape[wt->rank - 1];
    if (s.g < 1 || s.cin % s.g || s.cout % s.g || wt->shape[1] * s.g != s.cin)
        fail(c, "weight and groups do not match the input's %lld channels", (long long)s.cin);
    s.bdg = conv_blockdiag(c, &s) ? s.g : 1;
    if (s.bdg > 1)
        s.g = 1;
    conv_ints(c, 3, "stride", s.nsp, 1, s.s);
    conv_ints(c, 4, "padding", s.nsp, 0, s.p);
    conv_ints(c, 5, "dilation", s.nsp, 1, s.d);
    for (int i = 0; i < 2; i++) {
        if (s.s[i] < 1 || s.p[i] < 0 || s.d[i] < 1)
            fail(c, "stride and dilation must be positive and padding not negative");
        if (s.s[i] > INT32_MAX || s.p[i] > INT32_MAX || s.d[i] > INT32_MAX) /* (the extents' arithmetic in 64 bits) */
            fail(c, "stride, padding and dilation must be below 2^31");
    }
    s.hp = s.h + 2 * s.p[0];
    s.wp = s.w + 2 * s.p[1];
    s.oh = (s.hp - s.d[0] * (s.kh - 1) - 1) / s.s[0] + 1;
    s.ow = (s.wp - s.d[1] * (s.kw - 1) - 1) / s.s[1] + 1;
    if (s.hp < s.d[0] * (s.kh - 1) + 1 || s.wp < s.d[1] * (s.kw - 1) + 1)
        fail(c, "the kernel is larger than the padded input");
    s.cs[0] = s.cs[1] = 1;
    if (s.kh == 1 && s.kw == 1) { /* a 1x1 conv reads every s-th pixel: copy only those, then stride 1 */
        memcpy(s.cs, s.s, sizeof s.cs);
        s.hp = s.oh;
        s.wp = s.ow;
        s.s[0] = s.s[1] = 1;
    }
    /* merged when y is wider than the output, and for a 1x1 conv (its xp is
     * dense: one product of M = oh*ow instead of a batch of oh products of
     * ow rows); an NCHW result taken as the product's epilogue is then
     * split between cores only at whole sticks (be_matmul.c).  Not for one
     * input channel and a larger kernel: its xp, one lane per stick, staged
     * a whole image per row and missed LX from a batch of 12 (32x32) up;
     * the im2col below takes it */
    s.merged = s.s[0] == 1 && s.s[1] == 1 && ((s.wp > s.ow && s.cin > 1) || (s.kh == 1 && s.kw == 1));
    /* xp's pixels are C apart: with dilation 1 along W and one group, a
     * row of kw taps reads A at m*C + kw*C + ci, one k over (kw, ci).  Not
     * for one row of taps: one product alone would take an NCHW output's
     * copy as its epilogue, whose store the back half may split mid-stick.
     * The weight is then copied each run (wr): not when it is much larger
     * than the input (bench/run conv, ResNet-18's body: 128 channels at
     * 28x28, a weight 1.5 times the input, gains; 256 at 14x14, 12 times,
     * loses: layer3 0.45 -> 0.53 of the matmuls without the copy) */
    s.kwf = s.d[1] == 1 && s.g == 1 && s.kw > 1 && s.kh > 1 &&
                    gr_ttype_numel(wt) <= CONV_FOLD_MAX_WEIGHT * gr_ttype_numel(xt)
                ? s.kw
                : 1;
    /* few input channels and no merged rows (the stem: 3 channels, stride
     * 2): the products' K of kw*C (21) would fill a third of a stick and
     * each run as a batch of OH products of OW rows (bench/run conv: the
     * stem's 7 products 1.5 million cycles); one product over an im2col
     * copy of K = kh rows of kw*C, each padded to whole sticks, instead.
     * Always for windows that tile the input (stride = kernel, no padding:
     * ViT's patch embedding; the copy is the input, its rows padded): no
     * partial sum is stored, which the reference's bound counts on
     * (docs/validation.md, "Convolution") */
    const int tiles = s.s[0] == s.kh && s.s[1] == s.kw && !s.p[0] && !s.p[1];
    const int64_t kc = s.kh * ((s.cin * s.kw + CONV_IM2COL_ROW - 1) / CONV_IM2COL_ROW * CONV_IM2COL_ROW);
    /* padded rows tell their zeros by the index j < kw*C, exact in DL16
     * only up to 1024; a tiling conv takes the copy whatever (the
     * reference bounds it as one product; refused, it runs on the host) */
    const int pad_ok = kc == s.kh * s.kw * s.cin || kc / s.kh <= CONV_IM2COL_MAX_PADDED_ROW;
    const int chan = s.bdg == 1 && s.cin < CONV_ROWS_FIRST_MAX_C && conv_kc_chan(&s) <= kc;
    if (!s.merged && s.g == 1 && s.kh * s.kw > 1 && (pad_ok || tiles) && ((s.d[0] == 1 && s.d[1] == 1) || chan) &&
        ((s.cin < CONV_ROWS_FIRST_MAX_C && s.cin * s.kh * s.kw <= IR_IM2COL_MAX_K) || tiles ||
         s.oh * s.ow * kc <= CONV_IM2COL_MAX_GROWTH * s.h * s.w * s.cin)) {
        s.kc = kc;
        s.kwf = s.kw;
        /* few channels: K over (ci, kh, kw) pads each channel's taps
         * instead of each row's (the stem: 3 x 64 = 192 instead of 7 x 64),
         * read from a rows-first copy of x (conv_im2col_chan); the only
         * im2col that reads a dilated conv's taps (d apart in xq's rows) */
        s.chan = chan;
    }
    s.yw = s.merged ? s.wp : s.ow;
    return s;
}

/* The NCHW <-> channels-last copies go through a rows-first copy when the
 * NCHW rows are long and the channels few: an input of fewer channels than
 * a quarter stick (the layout pass sticks an NCHW input read only by the
 * copy on its channels, which then fill few lanes: the stem's 3) and rows
 * of at least a quarter stick; an output whose rows fill a stick.  Measured
 * with bench/run conv: the stem gains both, the 3x3 convs of 64 to 512
 * channels lose with either. */
#define CONV_ROWS_FIRST_MIN_W 16
#define CONV_OUT_ROWS_FIRST_MIN_W 64

/* Does a load of e walk its buffer across rows along variable 3 (the
 * copy's channel, its lanes)? */
static void strided_lane(void *ctx, const ir_expr *x)
{
    if (x->kind == IR_E_LOAD && x->idx.coef[3] != 0 && x->idx.coef[3] != 1)
        *(int *)ctx = 1;
}

/* A conv's copy: body over t as a realized buffer named name, made by the
 * ops in ops (or NULL) and, for from >= 0, by value from's and the current
 * op; its buffer. */
static int conv_copy(lctx *c, const gr_ttype *t, int body, const char *name, const uint64_t *ops, int from)
{
    int b = new_base(c, t, body, name);
    if (ops)
        ops_or(c, c->bases[b].ops, ops);
    if (from >= 0) {
        ops_of(c, c->bases[b].ops, from);
        ops_add_cur(c, c->bases[b].ops);
    }
    realize_base(c, b);
    return c->bases[b].buf;
}

/* A comparison of variable v's affine index with a constant decided over
 * v in [0, n) (every other variable's coefficient 0): 1 or 0; else -1. */
static int chan_cmp_known(const ir_arena *A, const ir_expr *x, int v, int64_t n)
{
    if (x->kind != IR_E_OP || x->b < 0 || A->e[x->a].kind != IR_E_INDEX || A->e[x->b].kind != IR_E_CONST)
        return -1;
    const ir_index *i = &A->e[x->a].idx;
    for (int d = 0; d < IR_MAX_VARS; d++)
        if (d != v && i->coef[d])
            return -1;
    const int64_t a = i->offset, b = i->offset + i->coef[v] * (n - 1);
    const int64_t lo = a < b ? a : b, hi = a < b ? b : a;
    const double k = A->e[x->b].value;
    switch (x->op) {
    case IR_LT: return hi < k ? 1 : lo >= k ? 0 : -1;
    case IR_GE: return lo >= k ? 1 : hi < k ? 0 : -1;
    default: return -1;
    }
}

static int prune_chan_rec(ir_arena *A, int e, int v, int64_t n, int *memo)
{
    if (memo[e] >= 0)
        return memo[e];
    const ir_expr x = A->e[e]; /* a copy: interning may move the arena */
    int r = e;
    if (x.kind == IR_E_WHERE) {
        const int known = chan_cmp_known(A, &A->e[x.a], v, n);
        if (known >= 0)
            r = prune_chan_rec(A, known ? x.b : x.c, v, n, memo);
        else
            r = ir_where(A, x.a, prune_chan_rec(A, x.b, v, n, memo), prune_chan_rec(A, x.c, v, n, memo));
    } else if (x.kind == IR_E_OP) {
        const int a = prune_chan_rec(A, x.a, v, n, memo);
        r = x.b < 0 ? ir_op1(A, x.op, a) : ir_op2(A, x.op, a, prune_chan_rec(A, x.b, v, n, memo));
    } else if (x.kind == IR_E_CAST) {
        r = ir_cast(A, prune_chan_rec(A, x.a, v, n, memo), x.dtype);
    }
    return memo[e] = r;
}

/* Body e of a K block's copy without the cat pieces (where-chains on the
 * channel, variable v in [0, n)) the block's channels lie outside: a block
 * reads only its own pieces. */
static int prune_chan(lctx *c, int e, int v, int64_t n)
{
    ir_arena *A = &c->p->A;
    int *memo = ir_xalloc((size_t)(e + 1) * sizeof *memo);
    for (int i = 0; i <= e; i++)
        memo[i] = -1;
    const int r = prune_chan_rec(A, e, v, n, memo);
    free(memo);
    return r;
}

/* x (N, C, H, W) copied into xt[n, h, c, w], its lanes still along w
 * (every row one stick of x), and read back at (n, c, h, w) = co: a
 * channels-last copy of an NCHW x stages only the sticks of a few rows of
 * xt per chunk, where x's would span every channel's (docs/compiler.md,
 * "Convolution"). */
static int conv_rows_first(lctx *c, int x, const convshape *s, const ir_index *co)
{
    const int64_t shape[4] = {s->n, s->h, s->cin, s->w};
    gr_ttype t = ttype(vtype(c, x)->dtype, 4, shape);
    ir_index xc[4] = {ir_idx_var(0), ir_idx_var(2), ir_idx_var(1), ir_idx_var(3)};
    xc[1].offset = s->c0;
    if (s->nsp == 1)
        xc[2] = ir_idx_var(3);
    int body = read_at(c, x, xc);
    if (s->kblocks)
        body = prune_chan(c, body, 2, s->cin);
    int buf = conv_copy(c, &t, body, "conv_rows", NULL, x);
    ir_index row = contiguous(&t), at[4] = {co[0], s->nsp == 2 ? co[2] : ir_idx_const(0), co[1], co[3]};
    at[2].offset -= s->c0;
    ir_index idx = ir_idx_compose(&row, 4, at);
    return ir_load(&c->p->A, buf, t.dtype, &idx);
}

/* The sticks between one channel's and the next's in the loads of a
 * copy's body that walk their buffer across rows along the channel
 * (variable 3), each buffer's rows a stick or more: at most. */
typedef struct {
    const lctx *c;
    int64_t lanes, step;
} chan_step;

static void note_chan_step(void *ctx, const ir_expr *x)
{
    chan_step *q = ctx;
    if (x->kind != IR_E_LOAD || x->idx.coef[3] == 0 || x->idx.coef[3] == 1)
        return;
    const gr_ttype *bt = &q->c->p->bufs[x->buf].type;
    const int64_t row = bt->rank ? bt->shape[bt->rank - 1] : 1, coef = x->idx.coef[3] < 0 ? -x->idx.coef[3] : x->idx.coef[3];
    const int64_t step = (coef + row - 1) / (row ? row : 1) * ((row + q->lanes - 1) / q->lanes);
    q->step = step > q->step ? step : q->step;
}

/* Would the channels-last copy of an NCHW x (its expression body) read
 * across its sticks miss the target's LX?  A row of the copy (one pixel,
 * every channel) stages the sticks its channels span, (C - 1) H of x's
 * rows, in two slots: on the 4-core chip 64 channels at 56 x 56 need
 * 904,704 bytes (ResNet-18's first 3x3 after its max pool); more when a
 * buffer body reads has shorter rows than x (MobileViT's fold, 32
 * channels of 8 x 8 from rows of 2: 254,464).  The rows-first copy stages
 * C sticks. */
static int conv_span_unfit(const lctx *c, const convshape *s, int body)
{
    const chip_config *cfg = c->p->opts.target;
    if (!cfg)
        return 0;
    chan_step q = {c, cfg->stick_bytes / 2, 0};
    ir_expr_walk(&c->p->A, body, note_chan_step, &q);
    int64_t step = s->h * ((s->w + q.lanes - 1) / q.lanes);
    step = q.step > step ? q.step : step;
    int64_t span = ((s->cin - 1) * step + 1) * (int64_t)cfg->stick_bytes;
    return 2 * span > (int64_t)cfg->lx_usable_bytes;
}

/* Whether padded coordinate at (before the padding's offset) along spatial
 * axis i (0: h, 1: w) lies inside x rather than in the padding's zeros. */
static int conv_inside(ir_arena *A, const convshape *s, int i, const ir_index *at)
{
    int e = ir_indexval(A, at), lo = ir_const(A, (double)s->p[i], GR_I64);
    int hi = ir_const(A, (double)(s->p[i] + (i ? s->w : s->h)), GR_I64);
    return ir_op2(A, IR_AND, ir_op2(A, IR_GE, e, lo), ir_op2(A, IR_LT, e, hi));
}

/* body, zero where padded coordinates at[0] (h) and at[1] (w) fall in
 * the padding. */
static int conv_zero_pad(ir_arena *A, const convshape *s, const ir_index at[2], int body, gr_dtype dt)
{
    int cond = -1;
    for (int i = 0; i < 2; i++) {
        if (!s->p[i])
            continue;
        int in = conv_inside(A, s, i, &at[i]);
        cond = cond < 0 ? in : ir_op2(A, IR_AND, cond, in);
    }
    return cond < 0 ? body : ir_where(A, cond, body, ir_const(A, 0, dt));
}

/* xp[n, hp, wp, c]: x padded with zeros (its every cs-th pixel),
 * channels-last, in a buffer.  One channel: stored as [n, hp, 1, wp] (the
 * same elements in the same order), so that the copy's rows are rows of
 * x: as [.., wp, 1] each row is one element and its store is staged whole
 * (spyre-4core: a dilated 3x3 on 2x1x32x32 needs 333,312 bytes of LX). */
static int conv_padded(lctx *c, int x, const convshape *s)
{
    ir_arena *A = &c->p->A;
    const int one = s->cin == 1, vw = one ? 3 : 2;
    const int64_t shape[4] = {s->n, s->hp + (s->merged && s->kw > 1), one ? 1 : s->wp, one ? s->wp : s->cin};
    gr_ttype t = ttype(vtype(c, x)->dtype, 4, shape);
    ir_index co[4], hv = ir_idx_var(1), wv = ir_idx_var(vw);
    co[0] = ir_idx_var(0);
    co[1] = ir_idx_var(5 - vw);
    co[1].offset = s->c0;
    hv.coef[1] = s->cs[0];
    wv.coef[vw] = s->cs[1];
    hv.offset = -s->p[0];
    wv.offset = -s->p[1];
    co[2] = s->nsp == 2 ? hv : wv;
    co[3] = wv;
    int body = read_at(c, x, co), strided = 0;
    if (s->kblocks)
        body = prune_chan(c, body, 5 - vw, s->cin);
    ir_expr_walk(A, body, strided_lane, &strided);
    if (strided && s->cin > 1 &&
        ((s->cin < CONV_ROWS_FIRST_MAX_C && s->w >= CONV_ROWS_FIRST_MIN_W) || conv_span_unfit(c, s, body)))
        body = conv_rows_first(c, x, s, co);
    ir_index at[2] = {ir_idx_var(1), ir_idx_var(vw)};
    at[0].coef[1] = s->cs[0];
    at[1].coef[vw] = s->cs[1];
    return conv_copy(c, &t, conv_zero_pad(A, s, at, body, t.dtype), "conv_in", NULL, x);
}

/* wr[kh, kw, ci, co]: the weight with a row of kw taps and the input
 * channels one K, in a buffer (weight-sized; its lanes along co, as B's);
 * for s->chan wq[ci, kh, kw, co]. */
static int conv_weight_rows(lctx *c, int w, const convshape *s)
{
    const int64_t shape[4] = {s->chan ? s->cin : s->kh, s->chan ? s->kh : s->kw, s->chan ? s->kw : s->cin, s->cout};
    gr_ttype t = ttype(vtype(c, w)->dtype, 4, shape);
    ir_index wc[4] = {ir_idx_var(3), ir_idx_var(2), ir_idx_var(0), ir_idx_var(1)};
    if (s->chan) {
        wc[1] = ir_idx_var(0);
        wc[2] = ir_idx_var(1);
        wc[3] = ir_idx_var(2);
    }
    if (s->nsp == 1)
        wc[2] = ir_idx_var(s->chan ? 2 : 1);
    return conv_copy(c, &t, read_at(c, w, wc), "conv_weight", NULL, w);
}

/* wr[kh, kw, ci, co] of a grouped conv run as one group: w's blocks on
 * the diagonal, zeros elsewhere; built as [kh, kw, G, ci, co] (the same
 * elements in the same order), where group g's block, co - g*C_out/G in
 * [0, C_out/G), is affine. */
static int conv_blockdiag_weight(lctx *c, int w, const convshape *s)
{
    ir_arena *A = &c->p->A;
    const int64_t g = s->bdg, cig = s->cin / g, cog = s->cout / g;
    const int64_t shape[5] = {s->kh, s->kw, g, cig, s->cout};
    gr_ttype t = ttype(vtype(c, w)->dtype, 5, shape);
    ir_index wc[4] = {ir_idx_var(4), ir_idx_var(3), ir_idx_var(0), ir_idx_var(1)};
    if (s->nsp == 1)
        wc[2] = ir_idx_var(1);
    ir_index in_g = ir_idx_var(4);
    in_g.coef[2] = -cog;
    int e = ir_indexval(A, &in_g);
    int same = ir_op2(A, IR_AND, ir_op2(A, IR_GE, e, ir_const(A, 0, GR_I64)),
                      ir_op2(A, IR_LT, e, ir_const(A, (double)cog, GR_I64)));
    int body = ir_where(A, same, read_at(c, w, wc), ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_wdiag", NULL, w);
}

/* An im2col copy's row of kw taps (kw*C elements) is padded to whole
 * sticks of CONV_IM2COL_ROW elements (a 128-byte stick of DL16), so that
 * each row is its own sticks: a row at kh*kw*C inside a stick is refused
 * as needing the whole copy staged in LX. */
/* xc[n, oh, ow, kh, j]: every tap's input of each output pixel, row kh's
 * kw taps at j = (kw, ci) < kw*C (xp's pixels are C apart, so they are
 * kw*C consecutive elements), zeros up to s->kc / kh. */
static int conv_im2col(lctx *c, int xp, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t hx = c->p->bufs[xp].type.shape[1], rowk = s->kw * s->cin;
    const int64_t shape[5] = {s->n, s->oh, s->ow, s->kh, s->kc / s->kh};
    gr_ttype t = ttype(c->p->bufs[xp].type.dtype, 5, shape);
    ir_index xi = ir_idx_const(0);
    const int64_t xc[5] = {hx * s->wp * s->cin, s->s[0] * s->wp * s->cin, s->s[1] * s->cin, s->wp * s->cin, 1};
    memcpy(xi.coef, xc, sizeof xc);
    ir_index j = ir_idx_var(4);
    int body = ir_load(A, xp, t.dtype, &xi);
    if (rowk < s->kc / s->kh) /* rows padded: zeros past kw*C */
        body = ir_where(A, ir_op2(A, IR_LT, ir_indexval(A, &j), ir_const(A, (double)rowk, GR_I64)), body,
                        ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_cols", ops, -1);
}

/* wr's rows of kw taps padded as xc's: wc[kh, j, co], zeros for j past
 * kw*C. */
static int conv_im2col_weight(lctx *c, int wr, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t rowk = s->kw * s->cin, shape[3] = {s->kh, s->kc / s->kh, s->cout};
    gr_ttype t = ttype(c->p->bufs[wr].type.dtype, 3, shape);
    ir_index wi = ir_idx_var(2), j = ir_idx_var(1);
    wi.coef[0] = rowk * s->cout;
    wi.coef[1] = s->cout;
    int in = ir_op2(A, IR_LT, ir_indexval(A, &j), ir_const(A, (double)rowk, GR_I64));
    int body = ir_where(A, in, ir_load(A, wr, t.dtype, &wi), ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_wcols", ops, -1);
}

/* xq[n, hp, c, wp]: x padded with zeros, its rows of every channel next
 * to each other (lanes along w, as x's): the rows an output row's taps
 * read are a few neighbouring sticks of it. */
static int conv_padded_rows(lctx *c, int x, const convshape *s)
{
    ir_arena *A = &c->p->A;
    const int64_t shape[4] = {s->n, s->hp, s->cin, s->wp};
    gr_ttype t = ttype(vtype(c, x)->dtype, 4, shape);
    ir_index hv = ir_idx_var(1), wv = ir_idx_var(3);
    hv.offset = -s->p[0];
    wv.offset = -s->p[1];
    ir_index co[4] = {ir_idx_var(0), ir_idx_var(2), s->nsp == 2 ? hv : wv, wv};
    int body = s->p[1] ? conv_rows_first(c, x, s, co) : read_at(c, x, co);
    const ir_index at[2] = {ir_idx_var(1), ir_idx_var(3)};
    return conv_copy(c, &t, conv_zero_pad(A, s, at, body, t.dtype), "conv_in", NULL, x);
}

/* xc[n, oh, ow, ci, j]: channel ci's taps of each output pixel, j = (kh,
 * kw) below kh*kw, zeros past it up to s->kc / C.  Row kh's kw taps are kw
 * consecutive elements of xq's row oh s + kh of channel ci: one load per
 * row of taps, each chosen for its lanes by a where on j (docs/compiler.md,
 * "Convolution"). */
static int conv_im2col_chan(lctx *c, int xq, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t wq = s->cin * s->wp, shape[5] = {s->n, s->oh, s->ow, s->cin, s->kc / s->cin};
    gr_ttype t = ttype(c->p->bufs[xq].type.dtype, 5, shape);
    ir_index j = ir_idx_var(4);
    int jv = ir_indexval(A, &j), body = ir_const(A, 0, t.dtype);
    for (int64_t kh = s->kh - 1; kh >= 0; kh--) {
        ir_index xi = ir_idx_const(kh * s->d[0] * wq - kh * s->kw * s->d[1]);
        const int64_t xc[5] = {s->hp * wq, s->s[0] * wq, s->s[1], s->wp, s->d[1]};
        memcpy(xi.coef, xc, sizeof xc);
        int in = ir_op2(A, IR_LT, jv, ir_const(A, (double)((kh + 1) * s->kw), GR_I64));
        body = ir_where(A, in, ir_load(A, xq, t.dtype, &xi), body);
    }
    return conv_copy(c, &t, body, "conv_cols", ops, -1);
}

/* wc[ci, j, co]: the weight as xc's K, wq[ci, kh, kw, co] (the weight
 * copied with its lanes along co, conv_weight_rows) at j = (kh, kw) below
 * kh*kw, zeros past it.  (A copy straight from w would walk j past a
 * channel's taps into the next output channel's, which the layout pass
 * cannot stick on co.) */
static int conv_im2col_chan_weight(lctx *c, int wq, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t shape[3] = {s->cin, s->kc / s->cin, s->cout};
    gr_ttype t = ttype(c->p->bufs[wq].type.dtype, 3, shape);
    ir_index wi = ir_idx_var(2), j = ir_idx_var(1);
    wi.coef[0] = s->kh * s->kw * s->cout;
    wi.coef[1] = s->cout;
    int in = ir_op2(A, IR_LT, ir_indexval(A, &j), ir_const(A, (double)(s->kh * s->kw), GR_I64));
    int body = ir_where(A, in, ir_load(A, wq, t.dtype, &wi), ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_wcols", ops, -1);
}

/* Tap (kh, kw)'s MATMUL node into a new (n, oh, ow, co) buffer; returns it.
 * With an im2col copy (s->kc) xp is xc and the one tap is every tap. */
static int conv_tap(lctx *c, int xp, int w, int wr, const convshape *s, int64_t kh, int64_t kw, const uint64_t *ops)
{
    enum { VN, VG, VOH, VM, VNN, VK };
    const int64_t shape[4] = {s->n, s->oh, s->yw, s->cout}, hx = c->p->bufs[xp].type.shape[1];
    gr_ttype t = ttype(c->p->bufs[xp].type.dtype, 4, shape);
    const int64_t cig = s->cin / s->g, cog = s->cout / s->g, merged = s->merged;
    int n = new_node(c, IR_MATMUL, &t, "conv_tap", ops);
    ir_node *N = &c->p->nodes[n];
    const int64_t r[6] = {s->n, s->g, merged || s->kc ? 1 : s->oh,
                          merged ? s->oh * s->yw : s->kc ? s->oh * s->ow : s->ow, cog, s->kc ? s->kc : cig * s->kwf};
    N->nbatch = 3;
    N->nvars = 6;
    memcpy(N->ranges, r, sizeof r);
    N->a = xp;
    N->aidx = ir_idx_const(((kh * s->d[0]) * s->wp + kw * s->d[1]) * s->cin);
    N->aidx.coef[VN] = hx * s->wp * s->cin;
    N->aidx.coef[VG] = cig;
    N->aidx.coef[VOH] = s->s[0] * s->wp * s->cin;
    N->aidx.coef[VM] = s->s[1] * s->cin;
    N->aidx.coef[VK] = 1;
    if (s->kc) { /* xc[n, m, (kh, j)] */
        N->aidx = ir_idx_var(VK);
        N->aidx.coef[VN] = s->oh * s->ow * s->kc;
        N->aidx.coef[VM] = s->kc;
    }
    ir_index wc[4];
    wc[0] = ir_idx_var(VNN);
    wc[0].coef[VG] = cog;
    wc[1] = ir_idx_var(VK);
    wc[1].offset = s->c0;
    wc[2] = ir_idx_const(s->nsp == 2 ? kh : kw);
    wc[3] = ir_idx_const(kw);
    if (wr >= 0) { /* wr[kh, (kw, ci), co] */
        N->b = wr;
        N->bidx = ir_idx_var(VNN);
        N->bidx.coef[VK] = s->cout;
        N->bidx.offset = (kh * s->kw + kw) * s->cin * s->cout;
    } else {
        N->b = c->bases[val(c, w)->base].buf;
        N->bidx = ir_idx_compose(&val(c, w)->map[0], s->nsp + 2, wc);
    }
    N->store = ir_idx_const(0);
    N->store.coef[VN] = s->oh * s->yw * s->cout;
    N->store.coef[VG] = cog;
    N->store.coef[VOH] = s->yw * s->cout;
    N->store.coef[VM] = s->cout;
    N->store.coef[VNN] = 1;
    ir_node_simplify(c->p, n);
    return c->p->nodes[n].out;
}

/* The bias read at channel variable 3 of (n, oh, ow, co), as dtype dt. */
static int conv_bias(lctx *c, int bias, gr_dtype dt, uint64_t *ops)
{
    ir_index at = ir_idx_var(3);
    ops_of(c, ops, bias);
    return ir_cast(&c->p->A, read_at(c, bias, &at), dt);
}

/* The one node reading value v, or -1 (none or more). */
static int sole_reader(lctx *c, int v)
{
    int r = -1;
    for (int i = 0; i < c->d->nnodes; i++) {
        const gr_node *n = &c->d->nodes[i];
        for (int a = 0; a < n->nargs; a++)
            if (n->args[a].kind == GR_ARG_VALUE && n->args[a].value == v) {
                if (r >= 0 && r != i)
                    return -1;
                r = i;
            }
    }
    return r;
}

/* Is v a graph output seen through reshapes and a permute (a 3-D conv's
 * [N OD, Co, OH, OW] as [N, Co, OD, OH, OW])? */
static int permuted_output(lctx *c, int v, int permuted)
{
    if (is_graph_output(c, v))
        return permuted;
    const int r = sole_reader(c, v);
    if (r < 0)
        return 0;
    const char *b = c->d->nodes[r].base;
    const int perm = !strcmp(b, "permute");
    if (!perm && strcmp(b, "view") && strcmp(b, "_unsafe_view") && strcmp(b, "reshape"))
        return 0;
    return permuted_output(c, c->d->nodes[r].out, permuted || perm);
}

/* Would the NCHW copy of a graph output t stage y's sticks again per
 * channel?  Its chunks of one channel's rows read the sticks of every
 * channel, each staged once only when a chunk of an image's channels, its
 * OH OW sticks in two slots, fits the target's LX (Conv2d(1, 32, 3) on
 * 16x1x28x28, spyre-4core: 1,970,162 cycles, 352,136 rows first). */
static int conv_out_unfit(const lctx *c, const gr_ttype *t)
{
    const chip_config *cfg = c->p->opts.target;
    int64_t px = 1;
    for (int d = 2; d < t->rank; d++)
        px *= t->shape[d];
    return cfg && 2 * px * (int64_t)cfg->stick_bytes > (int64_t)cfg->lx_usable_bytes;
}

/* out (of type t): y[n, oh, ow, co] seen at (n, co, (oh,) ow), a view.  A
 * graph output whose rows fill a stick, or whose image misses LX
 * (conv_out_unfit), is first copied into yt[n, oh, co, ow] (lanes along ow, a
 * chunk's rows reading the sticks of a few rows of y), which its copy into
 * NCHW reads along its sticks: y's own sticks would span every row's.  So
 * is one read as an output permuted across the batch, whatever its width:
 * the copy's chunks of rows of one channel would read the sticks of every
 * channel (a one-channel Conv3d, 16x32x32 by 8: 594,495 cycles, 367,714
 * rows first; on spyre-4core 1,599,214 and 530,077). */
static void conv_result(lctx *c, int out, int y, const gr_ttype *t)
{
    ir_index yc[4] = {ir_idx_var(0), t->rank == 4 ? ir_idx_var(2) : ir_idx_const(0), ir_idx_var(t->rank - 1),
                      ir_idx_var(1)};
    int yb = buffer_base(c, y, 0);
    if (t->shape[1] > 1 &&
        ((is_graph_output(c, out) && (t->shape[t->rank - 1] >= CONV_OUT_ROWS_FIRST_MIN_W || conv_out_unfit(c, t))) ||
         permuted_output(c, out, 0))) {
        const gr_ttype *yt = &c->p->bufs[y].type;
        const int64_t shape[4] = {yt->shape[0], yt->shape[1], t->shape[1], t->shape[t->rank - 1]};
        gr_ttype tt = ttype(t->dtype, 4, shape);
        ir_index at[4] = {ir_idx_var(0), ir_idx_var(1), ir_idx_var(3), ir_idx_var(2)};
        ir_index row = contiguous(yt), idx = ir_idx_compose(&row, 4, at);
        yb = new_base(c, &tt, ir_load(&c->p->A, y, t->dtype, &idx), "conv_out");
        ops_add_cur(c, c->bases[yb].ops);
        realize_base(c, yb);
        ir_index tc[4] = {yc[0], yc[1], ir_idx_var(1), yc[2]};
        memcpy(yc, tc, sizeof yc);
    }
    set_whole(c, out, yb);
    val(c, out)->type = *t;
    memcpy(val(c, out)->map, yc, sizeof yc);
    ops_add_cur(c, val(c, out)->ops);
}

/* A depthwise conv (one input and one output channel per group) as one
 * pointwise op on the SFP: y[n, oh, ow, c] = sum over the taps of
 * xp[n, oh s + kh d, ow s + kw d, c] w[c, 0, kh, kw] (+ bias[c]), lanes
 * along c for xp, w (sticked on c by the layout pass) and y: a product
 * would have K = 1 and N = 1 per group. */
static int conv_depthwise(lctx *c, int xp, int w, int bias, const convshape *s, uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int64_t shape[4] = {s->n, s->oh, s->ow, s->cout}, hx = c->p->bufs[xp].type.shape[1];
    gr_ttype t = ttype(c->p->bufs[xp].type.dtype, 4, shape);
    int body = -1;
    for (int64_t kh = 0; kh < s->kh; kh++)
        for (int64_t kw = 0; kw < s->kw; kw++) {
            ir_index xi = ir_idx_const(((kh * s->d[0]) * s->wp + kw * s->d[1]) * s->cin);
            xi.coef[0] = hx * s->wp * s->cin;
            xi.coef[1] = s->s[0] * s->wp * s->cin;
            xi.coef[2] = s->s[1] * s->cin;
            xi.coef[3] = 1;
            ir_index wc[4] = {ir_idx_var(3), ir_idx_const(0), ir_idx_const(s->nsp == 2 ? kh : kw), ir_idx_const(kw)};
            int term = ir_op2(A, IR_MUL, ir_load(A, xp, t.dtype, &xi), ir_cast(A, read_at(c, w, wc), t.dtype));
            body = body < 0 ? term : ir_op2(A, IR_ADD, body, term);
        }
    if (bias >= 0)
        body = ir_op2(A, IR_ADD, body, conv_bias(c, bias, t.dtype, ops));
    ops_of(c, ops, w);
    return conv_copy(c, &t, body, "conv_dw", ops, -1);
}

/* Would an NCW reader of a 1-D conv's channels-last y miss the target's
 * LX?  A row of it (one channel, ow pixels) stages a stick per pixel in two
 * slots: the 4-core chip's 157,312 bytes hold 614 (a Conv1d of stride 4
 * over 4,000 samples has 998). */
static int conv_row_unfit(const lctx *c, const convshape *s)
{
    const chip_config *cfg = c->p->opts.target;
    return cfg && 2 * s->ow * (int64_t)cfg->stick_bytes > (int64_t)cfg->lx_usable_bytes;
}

/* A 2-D conv of one input channel, dilated or 1x1: its taps' inputs are
 * copied with lanes along ow (conv_ncw_cols) as whole shifted rows and
 * its result is NCHW, where the per-channel im2col restickifies kh loads
 * per output pixel and y, 8 channels a stick, is copied into NCHW
 * (spyre-4core, 2x1x32x32: Conv2d(1, 8, 3, padding=2, dilation=2) 56,855
 * cycles, the host 27,035, now 15,244; Conv2d(1, 8, 1) 12,789 -> 6,821).
 * Not a larger undilated kernel: MNIST's Conv2d(1, 32, 3) on 16x1x28x28
 * ran 115,245 -> 172,454 cycles on spyre. */
static int conv_ncw_one(const convshape *s)
{
    return s->nsp == 2 && s->cin == 1 && (s->d[0] > 1 || s->d[1] > 1 || s->kh * s->kw == 1);
}

/* w[co, ci, (kh,) kw] as wt[co, (ci, kh, kw)] in a buffer sticked on its
 * K, or -1 when w's view does not hold (ci, kh, kw) contiguously. */
static int conv_ncw_weight(lctx *c, int w, const convshape *s, const uint64_t *ops)
{
    as_buffer_view(c, w);
    const lval *V = val(c, w);
    const ir_index *f = &V->map[0];
    const int r = s->nsp + 1;
    if (f->coef[r] != 1 || f->coef[r - 1] != s->kw || (s->nsp == 2 && f->coef[1] != s->kh * s->kw))
        return -1;
    ir_index at = ir_idx_var(1);
    at.coef[0] = f->coef[0];
    at.offset = f->offset;
    const int64_t shape[2] = {s->cout, s->cin * s->kh * s->kw};
    gr_ttype t = ttype(V->type.dtype, 2, shape);
    const lbase *B = &c->bases[V->base];
    return conv_copy(c, &t, ir_subst(&c->p->A, B->body, 1, &at, NULL), "conv_weight", ops, w);
}

/* x's coordinate along spatial axis i (0: h, 1: w) of output position
 * variable o and tap variable k, and its test of lying inside the padding's
 * zeros (-1 when unpadded). */
static ir_index conv_ncw_at(lctx *c, const convshape *s, int i, int o, int k, int *in)
{
    ir_arena *A = &c->p->A;
    ir_index at = ir_idx_var(o);
    at.coef[o] = s->s[i] * s->cs[i]; /* a 1x1 conv's stride is in cs */
    at.coef[k] = s->d[i];
    *in = s->p[i] ? conv_inside(A, s, i, &at) : -1;
    at.offset = -s->p[i];
    return at;
}

/* xt[n, (oh,) ci, (kh,) kw, ow]: tap (kh, kw)'s input of output pixel (oh,
 * ow) (zeros in the padding), lanes along ow as x's: B of the NCW product.
 * (x realized first put wav2vec2's GELU into the product's epilogue
 * instead: 4,918,487 -> 5,920,376 cycles on the 4-core chip.) */
static int conv_ncw_cols(lctx *c, int x, const convshape *s, const uint64_t *ops)
{
    ir_arena *A = &c->p->A;
    const int two = s->nsp == 2, r = two ? 6 : 4;
    const int64_t shape2[6] = {s->n, s->oh, s->cin, s->kh, s->kw, s->ow}, shape1[4] = {s->n, s->cin, s->kw, s->ow};
    gr_ttype t = ttype(vtype(c, x)->dtype, r, two ? shape2 : shape1);
    int inw, inh = -1;
    ir_index co[4] = {ir_idx_var(0), ir_idx_var(two ? 2 : 1), {0}, conv_ncw_at(c, s, 1, r - 1, r - 2, &inw)};
    if (two)
        co[2] = conv_ncw_at(c, s, 0, 1, 3, &inh);
    else /* x[n, ci, w]: read_at takes co[0..2] */
        co[2] = co[3];
    int body = read_at(c, x, co), in = inh < 0 ? inw : inw < 0 ? inh : ir_op2(A, IR_AND, inh, inw);
    if (in >= 0)
        body = ir_where(A, in, body, ir_const(A, 0, t.dtype));
    return conv_copy(c, &t, body, "conv_cols", ops, x);
}

/* A conv as the product the other way round, y[n, co, (oh,) ow] = wt[co,
 * k] xt[n, (oh,) k, ow] over k = (ci, (kh,) kw), a batch over (n, oh): m =
 * co, n = ow, its result NCHW (lanes along ow) with no channels-last copy
 * of x nor y.  Returns 0 when w's view does not allow it. */
static int conv_ncw(lctx *c, int out, int x, int w, int bias, const convshape *s, uint64_t *ops)
{
    const int two = s->nsp == 2, nb = two ? 2 : 1, VM = nb, VNN = nb + 1, VK = nb + 2;
    const int64_t K = s->cin * s->kh * s->kw, shape[4] = {s->n, s->cout, s->oh, s->ow};
    const int64_t shape1[3] = {s->n, s->cout, s->ow};
    const gr_ttype tt = two ? ttype(vtype(c, x)->dtype, 4, shape) : ttype(vtype(c, x)->dtype, 3, shape1), *t = &tt;
    int wt = conv_ncw_weight(c, w, s, ops);
    if (wt < 0)
        return 0;
    int xt = conv_ncw_cols(c, x, s, ops);
    int n = new_node(c, IR_MATMUL, t, "conv_tap", ops);
    ir_node *N = &c->p->nodes[n];
    const int64_t r2[5] = {s->n, s->oh, s->cout, s->ow, K}, r1[4] = {s->n, s->cout, s->ow, K};
    N->nbatch = nb;
    N->nvars = nb + 3;
    memcpy(N->ranges, two ? r2 : r1, (size_t)(nb + 3) * sizeof r2[0]);
    N->a = wt;
    N->aidx = ir_idx_var(VK);
    N->aidx.coef[VM] = K;
    N->b = xt;
    N->bidx = ir_idx_var(VNN);
    N->bidx.coef[VK] = s->ow;
    N->bidx.coef[0] = s->oh * K * s->ow;
    N->store = ir_idx_var(VNN);
    N->store.coef[0] = s->cout * s->oh * s->ow;
    N->store.coef[VM] = s->oh * s->ow;
    if (two) {
        N->bidx.coef[1] = K * s->ow;
        N->store.coef[1] = s->ow;
    }
    ir_node_simplify(c->p, n);
    int y = buffer_base(c, c->p->nodes[n].out, 0);
    if (bias >= 0) {
        ir_index at = ir_idx_var(1);
        ir_index id = contiguous(t);
        ops_of(c, ops, bias);
        int body = ir_op2(&c->p->A, IR_ADD, ir_load(&c->p->A, c->p->nodes[n].out, t->dtype, &id),
                          ir_cast(&c->p->A, read_at(c, bias, &at), t->dtype));
        y = new_base(c, t, body, "conv_sum");
        ops_or(c, c->bases[y].ops, ops);
    }
    set_whole(c, out, y);
    ops_add_cur(c, val(c, out)->ops);
    return 1;
}

/* Does weight w, through its view, read its buffer downwards (flipped: a
 * transposed conv's phase, dec_convt.c) or its input channels right after
 * the span of its output channels (w[ci, co, ..] seen transposed)?  A
 * kw-folded or im2col copy of it would then walk no stick (the layout pass
 * sticks a tensor only on a dim its readers walk upwards without carrying
 * out of it) and gather each lane; the per-tap products read it in place,
 * co along its sticks.  Only past CONV_GATHER_MAX_WEIGHT elements (of w
 * as the conv reads it, a phase's taps): a 4x4 stride-2 transposed conv on
 * 16x16 (one conv a phase), 16 -> 8 channels (512 elements a phase) runs
 * in 41,209 cycles folded, 49,750 per tap; 32 -> 16 (2,048) 61,045 and
 * 58,631; 32 -> 32 (4,096) 73,103 and 64,366; 128 -> 64 284,764 and
 * 114,183. */
#define CONV_GATHER_MAX_WEIGHT 1024
static int conv_weight_walks_no_stick(lctx *c, int w, const convshape *s)
{
    const lval *V = val(c, w);
    if (gr_ttype_numel(&V->type) <= CONV_GATHER_MAX_WEIGHT)
        return 0;
    const gr_ttype *bt = &c->bases[V->base].type;
    ir_index row = contiguous(bt), flat = ir_idx_compose(&row, bt->rank, V->map);
    for (int d = 0; d < V->type.rank; d++)
        if (flat.coef[d] < 0)
            return 1;
    return flat.coef[1] && flat.coef[1] == flat.coef[0] * s->cout;
}

/* Every tap's product of xp (and w or wr) added to sum (-1: none) in
 * y[n, oh, ow, co], the bias (-1: none) with the last; y's buffer. */
static int conv_taps(lctx *c, int xp, int w, int wr, const convshape *s, int bias, int sum, uint64_t *ops)
{
    const int64_t shape[4] = {s->n, s->oh, s->yw, s->cout};
    gr_ttype yt = ttype(c->p->bufs[xp].type.dtype, 4, shape);
    ir_index yi = contiguous(&yt);
    ir_arena *A = &c->p->A;
    for (int64_t kh = 0; kh < (s->kc ? 1 : s->kh); kh++)
        for (int64_t kw = 0; kw < s->kw; kw += s->kwf) {
            int tap = conv_tap(c, xp, w, wr, s, kh, kw, ops);
            int body = ir_load(A, tap, yt.dtype, &yi);
            if (sum >= 0)
                body = ir_op2(A, IR_ADD, body, ir_load(A, sum, yt.dtype, &yi));
            if (bias >= 0 && (s->kc || kh == s->kh - 1) && kw + s->kwf == s->kw)
                body = ir_op2(A, IR_ADD, body, conv_bias(c, bias, yt.dtype, ops));
            if (body == ir_load(A, tap, yt.dtype, &yi)) {
                sum = tap;
                continue;
            }
            sum = conv_copy(c, &yt, body, "conv_sum", ops, -1);
        }
    return sum;
}

/* Does a load of e walk its buffer across rows along variable 3, the
 * copy's channel: a stride other than one, or rows of one element (an
 * NCHW value of 1x1 pixels)? */
typedef struct {
    const lctx *c;
    int across;
} chan_across;

static void note_chan_across(void *ctx, const ir_expr *x)
{
    chan_across *q = ctx;
    if (x->kind != IR_E_LOAD || x->idx.coef[3] == 0)
        return;
    const gr_ttype *bt = &q->c->p->bufs[x->buf].type;
    q->across |= x->idx.coef[3] != 1 || (bt->rank && bt->shape[bt->rank - 1] == 1);
}

/* Input channels per K block of a conv whose channels-last copy reads x
 * across its sticks and whose rows-first copy (conv_rows_first: a row of
 * the copy stages a stick per channel, in two slots) still misses the
 * target's LX, or 0 (one block).  DeepLab's ASPP projection, 1,280
 * channels (332,800 bytes of LX a row on spyre-4core), runs as 5 blocks
 * of 256, each a copy and a product of K = 256 summed; DenseNet's last
 * block at 1x1 pixels (BN and ReLU over a cat of 11 [1, 32, 1, 1] pieces
 * and more, a stick per channel: 162,816 bytes at 832 channels) too. */
static int64_t conv_kblock(lctx *c, int x, const convshape *s)
{
    const chip_config *cfg = c->p->opts.target;
    if (!cfg || s->g != 1 || s->chan || s->kc || s->kwf != 1 ||
        2 * s->cin * (int64_t)cfg->stick_bytes <= (int64_t)cfg->lx_usable_bytes)
        return 0;
    ir_index co[4] = {ir_idx_var(0), ir_idx_var(3), ir_idx_var(1), ir_idx_var(2)};
    if (s->nsp == 1)
        co[2] = ir_idx_var(2);
    chan_across q = {c, 0};
    ir_expr_walk(&c->p->A, read_at(c, x, co), note_chan_across, &q);
    const int64_t lanes = cfg->stick_bytes / 2, blk = (int64_t)cfg->lx_usable_bytes / (4 * cfg->stick_bytes) / lanes * lanes;
    return q.across ? (blk > lanes ? blk : lanes) : 0;
}

/* The conv as K blocks of blk input channels (conv_kblock): each block's
 * channels-last copy of x and its taps, added to the blocks' before. */
static int conv_kblocks(lctx *c, int x, int w, int bias, const convshape *s, int64_t blk, uint64_t *ops)
{
    as_buffer_view(c, w);
    ops_of(c, ops, w);
    int sum = -1;
    for (int64_t c0 = 0; c0 < s->cin; c0 += blk) {
        convshape b = *s;
        b.c0 = c0;
        b.kblocks = 1;
        b.cin = (blk < s->cin - c0 ? blk : s->cin - c0);
        sum = conv_taps(c, conv_padded(c, x, &b), w, -1, &b, c0 + blk >= s->cin ? bias : -1, sum, ops);
    }
    return sum;
}

void l_convolution(lctx *c, int out, int opi)
{
    (void)opi;
    int x = tensor(c, 0, "input"), w = tensor(c, 1, "weight");
    const gr_arg *ba = arg(c, 2, "bias");
    int bias = ba && ba->kind == GR_ARG_VALUE ? ba->value : -1;
    const gr_ttype xt = *vtype(c, x), wt = *vtype(c, w);
    if (xt.dtype != wt.dtype || !ir_dtype_is_float(xt.dtype))
        fail(c, "input and weight must have one float dtype");
    convshape s = conv_shape(c, &xt, &wt);
    if ((s.kwf > 1 || s.kc) && conv_weight_walks_no_stick(c, w, &s)) {
        s.kwf = 1;
        s.kc = 0;
        s.chan = 0;
    }
    if (bias >= 0 && (vtype(c, bias)->rank != 1 || vtype(c, bias)->shape[0] != s.cout))
        fail(c, "argument bias must have %lld elements", (long long)s.cout);
    uint64_t *ops = ops_new(c);
    ops_add_cur(c, ops);
    if (s.bdg == 1 && s.g == 1 && ((s.nsp == 1 && conv_row_unfit(c, &s)) || conv_ncw_one(&s)) &&
        conv_ncw(c, out, x, w, bias, &s, ops)) {
        free(ops);
        return;
    }
    gr_ttype t = xt;
    t.shape[1] = s.cout;
    if (s.nsp == 2)
        t.shape[2] = s.oh;
    t.shape[t.rank - 1] = s.ow;
    const int64_t blk = s.bdg > 1 ? 0 : conv_kblock(c, x, &s);
    if (blk) {
        conv_result(c, out, conv_kblocks(c, x, w, bias, &s, blk, ops), &t);
        free(ops);
        return;
    }
    /* the stem's weight copy first: it needs nothing the input's copies make */
    int wq = s.chan ? conv_weight_rows(c, w, &s) : -1;
    int xp = s.chan ? conv_padded_rows(c, x, &s) : conv_padded(c, x, &s), wr = -1;
    if (conv_is_depthwise(&s)) {
        conv_result(c, out, conv_depthwise(c, xp, w, bias, &s, ops), &t);
        free(ops);
        return;
    }
    if (s.bdg > 1)
        wr = conv_blockdiag_weight(c, w, &s);
    else if ((s.kwf > 1 || s.kc) && !s.chan) /* an im2col K is (kh, kw, ci): kw = 1 too */
        wr = conv_weight_rows(c, w, &s);
    else
        as_buffer_view(c, w);
    ops_of(c, ops, w);
    int sum = -1;
    if (s.chan) {
        s.kc = conv_kc_chan(&s);
        xp = conv_im2col_chan(c, xp, &s, ops);
        wr = conv_im2col_chan_weight(c, wq, &s, ops);
    } else if (s.kc) {
        xp = conv_im2col(c, xp, &s, ops);
        if (s.kc != s.kh * s.kw * s.cin) /* rows padded */
            wr = conv_im2col_weight(c, wr, &s, ops);
    }
    conv_result(c, out, conv_taps(c, xp, w, wr, &s, bias, sum, ops), &t);
    free(ops);
}
