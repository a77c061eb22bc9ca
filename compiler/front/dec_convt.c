/* dec_convt.c: the decompose rule for transposed convolutions (1-D and
 * 2-D), as stride-1 convolutions of the unpadded input, one per output
 * phase: the sub-pixel decomposition (docs/compiler.md, "Transposed
 * convolution"); and for 3-D ones, as 2-D convolutions per depth tap
 * (conv3d_depth_taps, convt3d_depth_taps).
 *
 * Along one axis of stride s, padding p, dilation d and K taps, output o
 * sums x[i] w[k] over o + p = i s + k d.  The outputs o = q s + r of one
 * phase r take only the taps k = k0 + j T (T = s / gcd(s, d), k0 d = r + p
 * mod s) at the inputs i = q + c0 - j D (D = d / gcd(s, d), c0 = (r + p -
 * k0 d) / s): an ordinary convolution of x with those J taps reversed,
 * dilation D, its output q starting at input q + c0 - (J - 1) D.  Each phase
 * has Q = ceil(OUT / s) outputs; the phases are interleaved, along the last
 * axis by a product with a 0/1 matrix, along the rows by a cat over a new
 * axis and a reshape, and the first OUT kept.  A kernel a multiple of its
 * stride is one 1x1 convolution and shifted sums instead (phases_as_sums). */
#include "decompose.h"

#include <stdlib.h>

typedef struct {
    int64_t in, out, s, p, d, k; /* the op's, along one spatial axis */
    int64_t q;                   /* outputs per phase */
} ct_axis;

typedef struct {
    int64_t taps;   /* J (0: the phase takes no tap, bias alone) */
    int64_t start;  /* the first tap in the flipped weight */
    int64_t step;   /* T: between taps in the weight */
    int64_t dil;    /* D: between taps in the input */
    int64_t pad;    /* the phase conv's padding (both sides) */
    int64_t off;    /* its first output kept */
} ct_phase;

static int64_t max3(int64_t a, int64_t b, int64_t c)
{
    int64_t m = a > b ? a : b;
    return m > c ? m : c;
}

/* Phase r of axis a. */
static ct_phase axis_phase(const ct_axis *a, int64_t r)
{
    ct_phase f = {.step = a->s / ir_gcd(a->s, a->d), .dil = a->d / ir_gcd(a->s, a->d)};
    int64_t k0 = 0;
    while (k0 < f.step && k0 < a->k && ((k0 * a->d - r - a->p) % a->s + a->s) % a->s)
        k0++;
    if (k0 == f.step || k0 == a->k)
        return f;
    f.taps = (a->k - 1 - k0) / f.step + 1;
    const int64_t c0 = (r + a->p - k0 * a->d) / a->s; /* exact */
    const int64_t left = (f.taps - 1) * f.dil - c0, right = a->q + c0 - a->in;
    f.pad = max3(left, right, 0);
    f.off = f.pad - left;
    /* the flipped weight's tap K-1-k for k = k0 + (J-1) T first */
    f.start = a->k - 1 - k0 - (f.taps - 1) * f.step;
    return f;
}

/* The weight [Cin, Cout/g, K..] as a convolution's [Cout, Cin/g, K..],
 * flipped along its spatial axes. */
static int conv_weight(dctx *c, int w, int64_t g, int nsp)
{
    const gr_ttype t = dc_T(c, w);
    const int64_t dims[2] = {2, 3};
    w = dc_flip(c, w, nsp, dims);
    if (g == 1)
        return dc_transpose(c, w, 0, 1);
    int64_t split[GR_MAX_RANK] = {g, t.shape[0] / g, t.shape[1]}, back[GR_MAX_RANK] = {g * t.shape[1], t.shape[0] / g};
    for (int i = 0; i < nsp; i++)
        split[3 + i] = back[2 + i] = t.shape[2 + i];
    w = dc_transpose(c, dc_reshape(c, w, t.rank + 1, split), 1, 2);
    return dc_reshape(c, w, t.rank, back);
}

typedef struct {
    int x, w, bias;
    int64_t g;
    int nsp;
    ct_axis ax[2];
    gr_dtype dt;
    int one;     /* every phase's outputs, phases_as_one's, _as_sums' or _as_union's, or -1 */
    int one_dim; /* where its first phase axis is (then the next): 2 or 1 */
    int shifted; /* one's phases and rows are of o + p (phases_as_sums), not of o */
} ct_op;

/* A stride-1 convolution of the op's input by w, of type yt. */
static int conv(dctx *c, const ct_op *o, gr_ttype yt, int w, gr_arg bias, const int64_t *pad, const int64_t *dil,
                int64_t groups)
{
    const int64_t one[2] = {1, 1}, zero[2] = {0, 0};
    return DC_EMIT(c, "aten.convolution.default", yt, da_val(o->x), da_val(w), bias, da_ints(o->nsp, one),
                   da_ints(o->nsp, pad), da_ints(o->nsp, dil), da_bool(0), da_ints(o->nsp, zero), da_int(groups));
}

/* v [N, Cout, ..] plus the op's bias along Cout, if it has one. */
static int plus_bias(dctx *c, const ct_op *o, int v)
{
    if (o->bias < 0)
        return v;
    const gr_ttype t = dc_T(c, v);
    int64_t bs[GR_MAX_RANK] = {t.shape[1]};
    for (int i = 1; i < t.rank - 1; i++)
        bs[i] = 1;
    return dc_bin(c, "aten.add.Tensor", v, dc_reshape(c, o->bias, t.rank - 1, bs));
}

/* The op's bias (or none) for each of `taps` phases, as one convolution's
 * bias of co * taps channels: by channel then phase ([(co, taps)]) when
 * co_first, else by phase then channel. */
static gr_arg phases_bias(dctx *c, const ct_op *o, int64_t co, int64_t taps, int co_first)
{
    if (o->bias < 0)
        return (gr_arg){.kind = GR_ARG_NONE};
    const int64_t one[2] = {co_first ? co : 1, co_first ? 1 : co}, whole[2] = {co_first ? co : taps, co_first ? taps : co};
    const int64_t flat = co * taps;
    return da_val(dc_reshape(c, dc_expand(c, dc_reshape(c, o->bias, 2, one), 2, whole), 1, &flat));
}

/* bias (or 0) over [N, Cout, Q..]: a phase that takes no tap. */
static int phase_empty(dctx *c, const ct_op *o, const int64_t *shape)
{
    return plus_bias(c, o, dc_full(c, o->nsp + 2, shape, 0, o->dt));
}

/* Kernel = stride, no padding, dilation 1, one group and the output s
 * times the input (a UNet's ConvTranspose2d(k2, s2)): every phase is one
 * tap over the same input pixels, so all of them are one 1x1 convolution
 * of s.. Cout channels, the weight w[ci, co, K..] seen as [(co, K..), ci,
 * 1..] (a view: co and the taps are contiguous), its result seen as [N,
 * Cout, s.., Q..]; or -1.  One product of N = s.. Cout instead of s..
 * products, and one copy of the input. */
static int phases_as_one(dctx *c, const ct_op *o)
{
    int64_t taps = 1;
    for (int i = 0; i < o->nsp; i++) {
        const ct_axis *a = &o->ax[i];
        if (a->k != a->s || a->p || a->d != 1 || a->out != a->in * a->s)
            return -1;
        taps *= a->s;
    }
    if (o->g != 1 || taps == 1)
        return -1;
    const gr_ttype xt = dc_T(c, o->x), wt = dc_T(c, o->w);
    const int64_t cin = wt.shape[0], co = wt.shape[1], n = o->nsp;
    const int64_t perm[4] = {1, 2, n == 2 ? 3 : 0, 0}, ws[4] = {co * taps, cin, 1, 1}, zero[2] = {0, 0}, one[2] = {1, 1};
    const int w = dc_reshape(c, dc_permute(c, o->w, perm), wt.rank, ws);
    const gr_arg b = phases_bias(c, o, co, taps, 1);
    gr_ttype yt = xt;
    yt.shape[1] = co * taps;
    int y = conv(c, o, yt, w, b, zero, one, 1);
    int64_t split[6] = {xt.shape[0], co, o->ax[0].s, n == 2 ? o->ax[1].s : xt.shape[2]};
    for (int i = 0; i < o->nsp; i++)
        split[2 + n + i] = xt.shape[2 + i];
    return dc_reshape(c, y, 2 + 2 * o->nsp, split);
}

/* phases_as_sums with a kernel not a multiple of its stride pads the
 * weight with zero taps to one, only up to this many elements: the pad is
 * a copy of the weight read a lane at a time.  3x3 stride 2 on 16x16,
 * cycles union / sums: 16 -> 8 (2,048 elements padded) 25,608 / 24,229,
 * 32 -> 16 (8,192) 36,000 / 46,127, 64 -> 32 87,730 / 159,649; 5x5
 * stride 3, 4 -> 4 on 6x6 (576) 39,875 / 8,219. */
#define CT_SUMS_PAD_MAX_WEIGHT 4096

/* J: blocks of s taps along axis a, the last padded with zeros. */
static int64_t sums_taps(const ct_axis *a)
{
    return (a->k + a->s - 1) / a->s;
}

/* The weight [Cin, Cout, J s..] as the 1x1 convolution's [(J.., Cout,
 * s..), Cin, 1..]: its product gives every input pixel's J.. blocks of s..
 * Cout outputs. */
static int sums_weight(dctx *c, const ct_op *o)
{
    const gr_ttype wt = dc_T(c, o->w);
    const int n = o->nsp;
    int64_t split[6] = {wt.shape[0], wt.shape[1]}, perm[6], flat[4] = {wt.shape[1], wt.shape[0], 1, 1};
    for (int i = 0; i < n; i++) {
        split[2 + 2 * i] = sums_taps(&o->ax[i]);
        split[3 + 2 * i] = o->ax[i].s;
        perm[i] = 2 + 2 * i;
        perm[1 + n + i] = 3 + 2 * i;
        flat[0] *= split[2 + 2 * i] * o->ax[i].s;
    }
    perm[n] = 1;
    perm[1 + 2 * n] = 0;
    int w = o->w, padded = 0;
    int64_t pads[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
        pads[2 * (n - 1 - i) + 1] = split[2 + 2 * i] * o->ax[i].s - o->ax[i].k;
        padded |= pads[2 * (n - 1 - i) + 1] != 0;
    }
    if (padded)
        w = dc_pad(c, w, n, pads, 0);
    return dc_reshape(c, dc_permute(c, dc_reshape(c, w, 2 + 2 * n, split), perm), 2 + n, flat);
}

/* Dilation 1, one group and every kernel a multiple of its stride (K = J
 * s: FCN's and DCGAN's 2s, k16 s8; a small weight padded with zero taps to
 * one): one 1x1 convolution of J.. s.. Cout channels, then output position
 * o + p = (i + j) s + r is the sum over the J.. blocks j of input pixel
 * i's block j, shifted by j: [N, Cout, s.., Q'..] over o + p, or -1.  The
 * product does the op's MACs (of the padded kernel), and the weight is not
 * flipped. */
static int phases_as_sums(dctx *c, const ct_op *o)
{
    const gr_ttype xt = dc_T(c, o->x), wt = dc_T(c, o->w);
    const int n = o->nsp;
    int64_t blocks = 1, phases = 1, padded = 0, len[2], one[2] = {1, 1}, zero[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        const ct_axis *a = &o->ax[i];
        if (o->g != 1 || a->d != 1)
            return -1;
        blocks *= sums_taps(a);
        padded |= a->k % a->s != 0;
        len[i] = a->in + sums_taps(a) - 1;
        len[i] = len[i] > (a->s - 1 + a->p) / a->s + a->q ? len[i] : (a->s - 1 + a->p) / a->s + a->q;
        phases *= a->s;
    }
    if (phases == 1) /* stride 1: one convolution, its taps' products summed, costs less */
        return -1;
    if (padded && blocks * phases * wt.shape[0] * wt.shape[1] > CT_SUMS_PAD_MAX_WEIGHT)
        return -1;
    gr_ttype yt = xt;
    yt.shape[1] = wt.shape[1] * blocks;
    for (int i = 0; i < n; i++)
        yt.shape[1] *= o->ax[i].s;
    int y = conv(c, o, yt, sums_weight(c, o), (gr_arg){.kind = GR_ARG_NONE}, zero, one, 1);
    int64_t rows[5] = {xt.shape[0], blocks, yt.shape[1] / blocks}, block[6] = {xt.shape[0], wt.shape[1]};
    for (int i = 0; i < n; i++) {
        rows[3 + i] = xt.shape[2 + i];
        block[2 + i] = o->ax[i].s;
        block[2 + n + i] = xt.shape[2 + i];
    }
    y = dc_reshape(c, y, 3 + n, rows);
    int sum = -1;
    for (int64_t b = 0; b < blocks; b++) {
        int v = dc_reshape(c, dc_select(c, y, 1, b), 2 + 2 * n, block);
        int64_t pads[4], j = b;
        for (int i = n - 1; i >= 0; i--) {
            const int64_t ji = j % sums_taps(&o->ax[i]), at = 2 * (n - 1 - i);
            j /= sums_taps(&o->ax[i]);
            pads[at] = ji;
            pads[at + 1] = len[i] - o->ax[i].in - ji;
        }
        v = dc_pad(c, v, n, pads, 0);
        sum = sum < 0 ? v : dc_bin(c, "aten.add.Tensor", sum, v);
    }
    return plus_bias(c, o, sum);
}

/* phases_as_union only for a weight of at most this many elements: its
 * copy (flipped, padded, a cat) reads the op's weight a lane at a time.  A
 * 4x4 stride-2 one on 16x16 (measured before phases_as_sums took it),
 * cycles union / one conv a phase: 16 -> 8 channels (4,608 elements)
 * 29,617 / 41,209; 32 -> 16 (18,432) 48,000 / 58,631; 32 -> 32 (36,864)
 * 73,502 / 64,366; 64 -> 32 229,026 / 75,259 (a phase's weight past
 * 1,024 elements read by per-tap products: lower_conv.c). */
#define CT_UNION_MAX_WEIGHT 32768
/* and of at most this many phases (union_weight's stack of them): a
 * 9x9 stride's 81 fit the weight bound when each is one tap */
#define CT_MAX_PHASES 64

typedef struct {
    ct_phase f[2][64];
    int64_t lo[2], hi[2], right[2]; /* the union window: inputs q - lo .. q + hi; its right padding */
    int64_t taps;                   /* phases */
} ct_union;

/* The union of the phases' windows along each axis; 0, or -1 when a phase
 * takes no tap or the dilation is not 1. */
static int union_windows(const ct_op *o, ct_union *u)
{
    u->taps = 1;
    for (int i = 0; i < o->nsp; i++) {
        const ct_axis *a = &o->ax[i];
        if (a->d != 1)
            return -1;
        u->taps *= a->s;
        for (int64_t r = 0; r < a->s; r++) {
            ct_phase *p = &u->f[i][r];
            *p = axis_phase(a, r);
            if (!p->taps)
                return -1;
            const int64_t left = p->pad - p->off, up = p->taps - 1 - left, rt = a->q + up - a->in;
            u->lo[i] = r && u->lo[i] > left ? u->lo[i] : left;
            u->hi[i] = r && u->hi[i] > up ? u->hi[i] : up;
            u->right[i] = r && u->right[i] > rt ? u->right[i] : rt;
        }
    }
    return 0;
}

/* The union's weight [(r.., co), Cin, L..]: each phase's taps of the
 * flipped weight padded with zeros into the window, stacked. */
static int union_weight(dctx *c, const ct_op *o, const ct_union *u)
{
    int v[CT_MAX_PHASES];
    for (int k = 0; k < u->taps; k++) {
        const int64_t r[2] = {o->nsp == 2 ? k / o->ax[1].s : k, o->nsp == 2 ? k % o->ax[1].s : 0};
        int w = o->w;
        int64_t pads[4];
        for (int i = 0; i < o->nsp; i++) {
            const ct_phase *p = &u->f[i][r[i]];
            const int64_t before = u->lo[i] - (p->pad - p->off), at = 2 * (o->nsp - 1 - i);
            w = dc_slice(c, w, 2 + i, p->start, p->start + (p->taps - 1) * p->step + 1, p->step);
            pads[at] = before;
            pads[at + 1] = u->lo[i] + u->hi[i] + 1 - before - p->taps;
        }
        v[k] = dc_pad(c, w, o->nsp, pads, 0);
    }
    gr_ttype wt = dc_T(c, v[0]);
    wt.shape[0] *= u->taps;
    return DC_EMIT(c, "aten.cat.default", wt, da_vals((int)u->taps, v), da_int(0));
}

/* Dilation 1, one group, every phase taking a tap: all phases as one
 * convolution over the union of their windows, L taps an axis, each
 * phase's taps placed in it (zeros around), its s.. Cout outputs ordered
 * (r.., co) and seen as [N, s.., Cout, Q..]; or -1.  One product per row
 * of taps instead of one per phase and row (the autoencoder's 4x4 stride
 * 2: 3 instead of 8), for L^n / J^n times the MACs (9 / 4). */
static int phases_as_union(dctx *c, const ct_op *o)
{
    ct_union u;
    if (o->g != 1 || union_windows(o, &u) || u.taps == 1 || u.taps > CT_MAX_PHASES)
        return -1;
    const gr_ttype w0 = dc_T(c, o->w), xt = dc_T(c, o->x);
    const int64_t co = w0.shape[0];
    int64_t wide = u.taps * co * w0.shape[1];
    for (int i = 0; i < o->nsp; i++)
        wide *= u.lo[i] + u.hi[i] + 1;
    if (wide > CT_UNION_MAX_WEIGHT)
        return -1;
    int w = union_weight(c, o, &u);
    const gr_arg b = phases_bias(c, o, co, u.taps, 0);
    int64_t pad[2], one[2] = {1, 1}, split[6] = {xt.shape[0]};
    gr_ttype yt = xt;
    yt.shape[1] = u.taps * co;
    for (int i = 0; i < o->nsp; i++) {
        pad[i] = u.lo[i] > u.right[i] ? u.lo[i] : u.right[i];
        pad[i] = pad[i] > 0 ? pad[i] : 0;
        yt.shape[2 + i] = o->ax[i].in + 2 * pad[i] - u.lo[i] - u.hi[i];
        split[1 + i] = o->ax[i].s;
        split[2 + o->nsp + i] = yt.shape[2 + i];
    }
    split[1 + o->nsp] = co;
    int y = conv(c, o, yt, w, b, pad, one, 1);
    y = dc_reshape(c, y, 2 + 2 * o->nsp, split);
    for (int i = 0; i < o->nsp; i++)
        if (pad[i] - u.lo[i] || split[2 + o->nsp + i] != o->ax[i].q)
            y = dc_slice(c, y, 2 + o->nsp + i, pad[i] - u.lo[i], pad[i] - u.lo[i] + o->ax[i].q, 1);
    return y;
}

/* The outputs of phase (r[0], r[1]): [N, Cout, Q..]. */
static int phase_conv(dctx *c, const ct_op *o, const int64_t *r)
{
    if (o->one >= 0) {
        int v = o->one;
        for (int i = 0; i < o->nsp; i++)
            v = dc_select(c, v, o->one_dim, o->shifted ? (r[i] + o->ax[i].p) % o->ax[i].s : r[i]);
        for (int i = 0; o->shifted && i < o->nsp; i++) {
            const int64_t c0 = (r[i] + o->ax[i].p) / o->ax[i].s;
            if (c0 || dc_T(c, v).shape[2 + i] != o->ax[i].q)
                v = dc_slice(c, v, 2 + i, c0, c0 + o->ax[i].q, 1);
        }
        return v;
    }
    const gr_ttype xt = dc_T(c, o->x), wt = dc_T(c, o->w);
    int64_t shape[4] = {xt.shape[0], wt.shape[0]}, pad[2], dil[2];
    ct_phase f[2];
    int w = o->w;
    for (int i = 0; i < o->nsp; i++) {
        f[i] = axis_phase(&o->ax[i], r[i]);
        shape[2 + i] = o->ax[i].q;
    }
    for (int i = 0; i < o->nsp; i++) {
        if (!f[i].taps)
            return phase_empty(c, o, shape);
        w = dc_slice(c, w, 2 + i, f[i].start, f[i].start + (f[i].taps - 1) * f[i].step + 1, f[i].step);
        pad[i] = f[i].pad;
        dil[i] = f[i].dil;
    }
    gr_ttype yt = xt;
    yt.shape[1] = wt.shape[0];
    for (int i = 0; i < o->nsp; i++)
        yt.shape[2 + i] = o->ax[i].in + 2 * f[i].pad - f[i].dil * (f[i].taps - 1);
    int y = conv(c, o, yt, w, o->bias >= 0 ? da_val(o->bias) : (gr_arg){.kind = GR_ARG_NONE}, pad, dil, o->g);
    for (int i = 0; i < o->nsp; i++)
        if (f[i].off || yt.shape[2 + i] != o->ax[i].q)
            y = dc_slice(c, y, 2 + i, f[i].off, f[i].off + o->ax[i].q, 1);
    return y;
}

/* Elements of the last axis one block of the interleave takes when the
 * axis is long: a stick's worth, so that the 0/1 matrix is (s B) x (s B)
 * instead of (s Q) x OUT.  Whole, a 1-D 4 -> 4 channel stride-4 one to
 * 4,096 outputs read 33.5 MB of matrix (337,788 of its 354,446 cycles). */
#define CT_BLOCK 64

/* The last axis's phases (of row r[0] in 2-D) side by side, [.., s Q],
 * times the 0/1 matrix that interleaves them: [.., OUT].  A cat over a
 * new last axis of s would store s values a stick (docs/compiler.md,
 * "Nearest upsampling").  A long axis (Q a multiple of CT_BLOCK) is
 * interleaved by blocks: each phase seen as [.., Q/B, B], the blocks side
 * by side [.., Q/B, s B] times an (s B) x (s B) matrix, seen as [.., Q s]
 * and cut to OUT. */
static int interleave_last(dctx *c, const ct_op *o, int64_t *r)
{
    const int i = o->nsp - 1;
    const ct_axis *a = &o->ax[i];
    const int64_t b = a->q > CT_BLOCK && a->q % CT_BLOCK == 0 ? CT_BLOCK : a->q;
    const int64_t cols = b < a->q ? a->s * b : a->out;
    int v[64];
    for (int k = 0; k < a->s; k++) {
        r[i] = k;
        v[k] = phase_conv(c, o, r);
    }
    if (a->s == 1)
        return v[0];
    const gr_ttype pt = dc_T(c, v[0]);
    gr_ttype t = pt;
    if (b < a->q) {
        t.shape[t.rank - 1] = a->q / b;
        t.shape[t.rank++] = b;
        for (int k = 0; k < a->s; k++)
            v[k] = dc_reshape(c, v[k], t.rank, t.shape);
    }
    t.shape[t.rank - 1] = a->s * b;
    int side = DC_EMIT(c, "aten.cat.default", t, da_vals((int)a->s, v), da_int(t.rank - 1));
    float *m = calloc((size_t)(a->s * b * cols) + 1, sizeof *m); /* + 1: no elements is no failure */
    if (!m)
        abort();
    for (int64_t k = 0; k < a->s * b; k++)
        if (k % b * a->s + k / b < cols)
            m[k * cols + k % b * a->s + k / b] = 1;
    gr_ttype mt = {.dtype = t.dtype, .rank = 2, .shape = {a->s * b, cols}};
    int y = dc_last_axis_times(c, side, dc_const(c, mt, m));
    if (b == a->q)
        return y;
    gr_ttype yt = pt;
    yt.shape[yt.rank - 1] = a->q * a->s;
    y = dc_reshape(c, y, yt.rank, yt.shape);
    return yt.shape[yt.rank - 1] == a->out ? y : dc_slice(c, y, yt.rank - 1, 0, a->out, 1);
}

/* 2-D: the rows of phases r[0], each interleaved along the last axis,
 * stacked as [N, Cout, Q, s, OUT'] (rows of whole sticks) and seen as
 * [N, Cout, Q s, OUT'], of which the first OUT rows. */
static int interleave(dctx *c, const ct_op *o)
{
    int64_t r[2] = {0, 0};
    if (o->nsp == 1)
        return interleave_last(c, o, r);
    const ct_axis *a = &o->ax[0];
    int v[64];
    for (int k = 0; k < a->s; k++) {
        r[0] = k;
        v[k] = interleave_last(c, o, r);
        v[k] = a->s > 1 ? dc_unsqueeze(c, v[k], 3) : v[k];
    }
    if (a->s == 1)
        return v[0];
    gr_ttype t = dc_T(c, v[0]);
    t.shape[3] = a->s;
    int y = DC_EMIT(c, "aten.cat.default", t, da_vals((int)a->s, v), da_int(3));
    const int64_t shape[4] = {t.shape[0], t.shape[1], a->q * a->s, t.shape[4]};
    y = dc_reshape(c, y, 4, shape);
    return a->q * a->s == a->out ? y : dc_slice(c, y, 2, 0, a->out, 1);
}

/* phases_as_sums' [N, Cout, s.., L..] over o + p as the output: permuted
 * to [N, Cout, L, s, ..], seen as [N, Cout, L s..] (pixel_shuffle's
 * reshape, permute, reshape), and from p the OUT outputs of each axis. */
static int shuffle_sums(dctx *c, const ct_op *o)
{
    const gr_ttype t = dc_T(c, o->one);
    const int n = o->nsp;
    int64_t perm[6] = {0, 1}, flat[4] = {t.shape[0], t.shape[1]};
    for (int i = 0; i < n; i++) {
        perm[2 + 2 * i] = 2 + n + i;
        perm[3 + 2 * i] = 2 + i;
        flat[2 + i] = t.shape[2 + n + i] * t.shape[2 + i];
    }
    int y = dc_reshape(c, dc_permute(c, o->one, perm), 2 + n, flat);
    for (int i = 0; i < n; i++)
        if (o->ax[i].p || flat[2 + i] != o->ax[i].out)
            y = dc_slice(c, y, 2 + i, o->ax[i].p, o->ax[i].p + o->ax[i].out, 1);
    return y;
}

/* A 3-D convolution's argument k (stride, padding, dilation) per axis. */
static void conv3d_arg(dctx *c, const gr_node *n, int k, int64_t *v)
{
    const char *keys[3] = {"stride", "padding", "dilation"};
    const int cnt = dc_ints(c, n, 3 + k, keys[k], v);
    if (cnt != 1 && cnt != 3)
        dc_fail(c, "argument %s must have 3 values", keys[k]);
    v[1] = v[cnt == 1 ? 0 : 1];
    v[2] = v[cnt == 1 ? 0 : 2];
}

/* Depth taps are stacked into one product's K (conv3d_depth_taps) while
 * their channels fill one stick channels-last (the stacked input is as
 * many sticks as one tap's) and K stays within the 2-D path's bound on an
 * im2col product's (IR_STICK_LANES, IR_IM2COL_MAX_K). */

/* A 3-D convolution's operands and arguments (conv3d_depth_taps). */
typedef struct {
    int xd, w, bias;                 /* xd: x padded along D, [N, Dp, C, H, W] */
    gr_ttype xt, wt, ot;
    int64_t g, kd, od, s[GR_MAX_RANK], p[GR_MAX_RANK], d[GR_MAX_RANK];
} c3_op;

/* The OD depths tap k reads, [N, OD, C, H, W] seen as `rank` dims. */
static int c3_tap_input(dctx *c, const c3_op *o, int64_t k, int rank, const int64_t *shape)
{
    const int64_t at = k * o->d[0];
    return dc_reshape(c, dc_slice(c, o->xd, 1, at, at + (o->od - 1) * o->s[0] + 1, o->s[0]), rank, shape);
}

/* The 2-D convolution of images x [N OD, K, H, W] by w [Co, K/G, KH, KW]
 * with o's H and W arguments, [N OD, Co, OH, OW]. */
static int c3_conv2d(dctx *c, const c3_op *o, int x, int w, int bias)
{
    const int64_t zero[2] = {0, 0};
    const gr_ttype yt = {.dtype = o->ot.dtype, .rank = 4,
                         .shape = {o->xt.shape[0] * o->od, o->wt.shape[0], o->ot.shape[3], o->ot.shape[4]}};
    const gr_arg b = bias < 0 ? (gr_arg){.kind = GR_ARG_NONE} : da_val(bias);
    return DC_EMIT(c, "aten.convolution.default", yt, da_val(x), da_val(w), b, da_ints(2, o->s + 1),
                   da_ints(2, o->p + 1), da_ints(2, o->d + 1), da_bool(0), da_ints(2, zero), da_int(o->g));
}

/* The depth taps summed: one 2-D convolution per tap, by w[:, :, k]. */
static int c3_taps_summed(dctx *c, const c3_op *o)
{
    const int64_t batch[4] = {o->xt.shape[0] * o->od, o->xt.shape[1], o->xt.shape[3], o->xt.shape[4]};
    int sum = -1;
    for (int64_t k = 0; k < o->kd; k++) {
        const int y = c3_tap_input(c, o, k, 4, batch);
        const int t = c3_conv2d(c, o, y, dc_select(c, o->w, 2, k), k ? -1 : o->bias);
        sum = sum < 0 ? t : dc_bin(c, "aten.add.Tensor", sum, t);
    }
    return sum;
}

/* The depth taps stacked into the product's K: the taps' inputs side by
 * side per group, [N OD, G KD C/G, H, W], by w seen as [Co, KD C/G, KH,
 * KW]: one 2-D convolution. */
static int c3_taps_stacked(dctx *c, const c3_op *o)
{
    const int64_t cg = o->wt.shape[1];
    const int64_t tap[6] = {o->xt.shape[0], o->od, o->g, 1, cg, o->xt.shape[3] * o->xt.shape[4]};
    int v[IR_IM2COL_MAX_K];
    for (int64_t k = 0; k < o->kd; k++)
        v[k] = c3_tap_input(c, o, k, 6, tap);
    gr_ttype t = dc_T(c, v[0]);
    t.shape[3] = o->kd;
    const int x = o->kd == 1 ? v[0] : DC_EMIT(c, "aten.cat.default", t, da_vals((int)o->kd, v), da_int(3));
    const int64_t batch[4] = {o->xt.shape[0] * o->od, o->xt.shape[1] * o->kd, o->xt.shape[3], o->xt.shape[4]};
    const int64_t perm[5] = {0, 2, 1, 3, 4}, wk[4] = {o->wt.shape[0], o->kd * cg, o->wt.shape[3], o->wt.shape[4]};
    const int w = dc_reshape(c, dc_permute(c, o->w, perm), 4, wk);
    return c3_conv2d(c, o, dc_reshape(c, x, 4, batch), w, o->bias);
}

/* A 3-D convolution as 2-D convolutions over its kernel's depth taps kd:
 * x [N, C, D, H, W] padded along D, seen as [N, Dp, C, H, W], the OD
 * depths tap kd reads (from kd dd, stepping sd) as a batch of N OD
 * images, times w[:, :, kd]; [N OD, Co, OH, OW] seen as [N, Co, OD, OH,
 * OW].  With the taps' channels within a stick and their K within the
 * im2col bound (C/G KD <= 64, C/G KD KH KW <= 256) the depth taps are one
 * product, divided over the cores as a 2-D convolution's (one input
 * channel, 16x32x32 by 8: 1,211,086 cycles summed, their sum on one core;
 * usermodels' r3d 106,198 -> 75,976).  Else each tap is its own product,
 * the 2-D path's implicit GEMM reading the depth slice in place, summed:
 * stacked, a 7x7 stem's taps grow its im2col (mc3_18's stem went to the
 * host on spyre-4core), r2plus1d_18's 45-channel 3x1x1 taps its 1x1
 * input (spyre-4core 2,572,115 -> 5,295,846 cycles, three ops to the
 * host). */
static int conv3d_depth_taps(dctx *c, const gr_node *n)
{
    c3_op o = {.w = dc_val(c, n, 1, "weight"), .bias = dc_opt_val(c, n, 2, "bias")};
    const int x = dc_val(c, n, 0, "input");
    o.xt = dc_T(c, x);
    o.wt = dc_T(c, o.w);
    o.ot = c->g->values[n->out].type;
    o.g = (int64_t)dc_num(c, n, 8, "groups", 1);
    if (o.wt.rank != 5 || o.ot.rank != 5 || o.g < 1 || o.xt.shape[1] % o.g || o.wt.shape[1] * o.g != o.xt.shape[1])
        dc_fail(c, "weight and groups do not match the input's %lld channels", (long long)o.xt.shape[1]);
    conv3d_arg(c, n, 0, o.s);
    conv3d_arg(c, n, 1, o.p);
    conv3d_arg(c, n, 2, o.d);
    for (int i = 0; i < 3; i++)
        if (o.s[i] < 1 || o.p[i] < 0 || o.d[i] < 1 || o.p[i] > INT32_MAX || o.d[i] > INT32_MAX)
            dc_fail(c, "lowers positive strides and dilations below 2^31, padding not negative");
    o.kd = o.wt.shape[2];
    o.od = (o.xt.shape[2] + 2 * o.p[0] - o.d[0] * (o.kd - 1) - 1) / o.s[0] + 1;
    if (o.xt.shape[2] + 2 * o.p[0] < o.d[0] * (o.kd - 1) + 1) /* as PyTorch and the host's (ref_conv.c) */
        dc_fail(c, "the kernel does not fit the padded input");
    const int64_t dpad[6] = {0, 0, 0, 0, o.p[0], o.p[0]}, perm[5] = {0, 2, 1, 3, 4};
    o.xd = dc_permute(c, o.p[0] ? dc_pad(c, x, 3, dpad, 0) : x, perm);
    const int64_t ck = o.wt.shape[1] * o.kd, k = ck * o.wt.shape[3] * o.wt.shape[4];
    const int y = o.kd > 1 && ck <= IR_STICK_LANES && k <= IR_IM2COL_MAX_K ? c3_taps_stacked(c, &o)
                                                                         : c3_taps_summed(c, &o);
    const int64_t split[5] = {o.xt.shape[0], o.od, o.wt.shape[0], o.ot.shape[3], o.ot.shape[4]};
    return dc_permute(c, dc_reshape(c, y, 5, split), perm);
}

/* A transposed convolution of x [N, Cin, ..] (1 or 2 spatial axes) by w
 * with v its stride, padding, dilation and output_padding per axis, as
 * above. */
static int convt(dctx *c, int x, int w, int bias, int64_t g, int64_t (*v)[GR_MAX_RANK])
{
    ct_op o = {.x = x, .w = w, .bias = bias, .g = g};
    const gr_ttype xt = dc_T(c, o.x), wt = dc_T(c, o.w);
    o.nsp = xt.rank - 2;
    o.dt = xt.dtype;
    if (o.g < 1 || wt.shape[0] != xt.shape[1] || xt.shape[1] % o.g)
        dc_fail(c, "weight and groups do not match the input's %lld channels", (long long)xt.shape[1]);
    for (int i = 0; i < o.nsp; i++) {
        ct_axis *a = &o.ax[i];
        *a = (ct_axis){.in = xt.shape[2 + i], .s = v[0][i], .p = v[1][i], .d = v[2][i], .k = wt.shape[2 + i]};
        if (a->s < 1 || a->p < 0 || a->d < 1 || a->s > 64 || v[3][i] < 0 || (v[3][i] >= a->s && v[3][i] >= a->d))
            dc_fail(c, "lowers strides of 1 to 64, padding not negative, dilation positive and output_padding "
                       "below stride or dilation");
        if (a->p > INT32_MAX || a->d > INT32_MAX) /* (the extent's and phases' arithmetic in 64 bits) */
            dc_fail(c, "stride, padding and dilation must be below 2^31");
        /* the extent from the arguments, not the declared one: a declared
         * one that differs is the graph's mistake (check_results) */
        a->out = (a->in - 1) * a->s - 2 * a->p + a->d * (a->k - 1) + v[3][i] + 1;
        if (a->out < 1) /* as PyTorch and the host's (ref_conv.c) */
            dc_fail(c, "the kernel does not fit the padded input");
        a->q = (a->out + a->s - 1) / a->s;
    }
    o.one = phases_as_one(c, &o);
    o.one_dim = 2;
    if (o.one < 0) {
        o.one = phases_as_sums(c, &o);
        o.shifted = o.one >= 0;
    }
    if (o.one < 0) {
        o.w = conv_weight(c, o.w, o.g, o.nsp);
        o.one = phases_as_union(c, &o);
        o.one_dim = 1;
    }
    /* 2-D strides past 2 along the rows: the interleave's s phases side by
     * side and its [s Q, OUT] matrix grow with s (FCN's 8x: 55,226 cycles
     * interleaved, 30,834 shuffled); stride 2 and 1-D ones interleave
     * cheaper (DCGAN 70,545 / 122,133, the audio decoder 412,124 /
     * 453,503). */
    return o.shifted && o.nsp == 2 && o.ax[1].s > 2 ? shuffle_sums(c, &o) : interleave(c, &o);
}

/* A 3-D transposed convolution as 2-D ones per depth tap k: depth i of x
 * (a batch of N ID images) by w[:, :, k] lands on output depth o + p = i s
 * + k d, so each tap's [N, ID, F] (F = Cout OH OW) is spread to stride s
 * along depth by zeros, shifted by k d, and the taps summed; then from p
 * the OD depths, plus the bias.  v as convt's, 3 values an axis. */
static int convt3d_depth_taps(dctx *c, int x, int w, int bias, int64_t g, int64_t (*v)[GR_MAX_RANK])
{
    const gr_ttype xt = dc_T(c, x), wt = dc_T(c, w);
    const int64_t n = xt.shape[0], id = xt.shape[2], kd = wt.shape[2], s = v[0][0], p = v[1][0], d = v[2][0];
    if (s < 1 || s > 64 || p < 0 || d < 1 || d > INT32_MAX || p > INT32_MAX || v[3][0] < 0 ||
        (v[3][0] >= s && v[3][0] >= d))
        dc_fail(c, "lowers strides of 1 to 64, padding not negative, dilation positive and output_padding "
                   "below stride or dilation");
    const int64_t od = (id - 1) * s - 2 * p + d * (kd - 1) + v[3][0] + 1, spread = id * s;
    if (od < 1)
        dc_fail(c, "the kernel does not fit the padded input");
    const int64_t len = od + 2 * p > (kd - 1) * d + spread ? od + 2 * p : (kd - 1) * d + spread;
    const int64_t perm[5] = {0, 2, 1, 3, 4}, imgs[4] = {n * id, xt.shape[1], xt.shape[3], xt.shape[4]};
    const int xb = dc_reshape(c, dc_permute(c, x, perm), 4, imgs);
    int64_t hw[4][GR_MAX_RANK];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            hw[k][i] = v[k][1 + i];
    int sum = -1, all = -1;
    gr_ttype yt = dc_T(c, xb);
    if (g == 1) {
        const int64_t wk[4] = {wt.shape[0], kd * wt.shape[1], wt.shape[3], wt.shape[4]};
        all = convt(c, xb, dc_reshape(c, dc_permute(c, w, perm), 4, wk), -1, g, hw);
        yt = dc_T(c, all);
        yt.shape[1] /= kd;
        const int64_t taps[4] = {n, id, kd, yt.shape[1] * yt.shape[2] * yt.shape[3]};
        all = dc_reshape(c, all, 4, taps);
    }
    for (int64_t k = 0; k < kd; k++) {
        int y = all >= 0 ? dc_select(c, all, 2, k) : convt(c, xb, dc_select(c, w, 2, k), -1, g, hw);
        yt = all >= 0 ? yt : dc_T(c, y);
        const int64_t f = yt.shape[1] * yt.shape[2] * yt.shape[3];
        const int64_t each[4] = {n, id, 1, f}, flat[3] = {n, spread, f};
        const int64_t zeros[4] = {0, 0, 0, s - 1}, shift[4] = {0, 0, k * d, len - k * d - spread};
        y = dc_reshape(c, y, 4, each);
        y = dc_reshape(c, s > 1 ? dc_pad(c, y, 2, zeros, 0) : y, 3, flat);
        y = dc_pad(c, y, 2, shift, 0);
        sum = sum < 0 ? y : dc_bin(c, "aten.add.Tensor", sum, y);
    }
    const int64_t co = yt.shape[1], rows[4] = {n, od, co, yt.shape[2] * yt.shape[3]}, bs[2] = {co, 1};
    const int64_t split[5] = {n, od, co, yt.shape[2], yt.shape[3]};
    int y = dc_reshape(c, p || len != od ? dc_slice(c, sum, 1, p, p + od, 1) : sum, 4, rows);
    if (bias >= 0)
        y = dc_bin(c, "aten.add.Tensor", y, dc_reshape(c, bias, 2, bs));
    return dc_permute(c, dc_reshape(c, y, 5, split), perm);
}

/* convolution(x, w, bias, stride, padding, dilation, transposed,
 * output_padding, groups): a transposed one of 1 or 2 spatial axes as
 * above, a 3-D one of either kind as depth taps; any other is kept. */
int dc_r_convolution(dctx *c, const gr_node *n, int *out)
{
    const int x = dc_val(c, n, 0, "input");
    const int rank = dc_T(c, x).rank;
    if (!dc_num(c, n, 6, "transposed", 0)) {
        if (rank != 5)
            return 0;
        out[0] = conv3d_depth_taps(c, n);
        return 1;
    }
    const int w = dc_val(c, n, 1, "weight"), bias = dc_opt_val(c, n, 2, "bias");
    const int nsp = rank - 2;
    if (nsp < 1 || nsp > 3 || dc_T(c, w).rank != rank || c->g->values[n->out].type.rank != rank)
        dc_fail(c, "lowers 1-D, 2-D and 3-D transposed convolutions of a batched input only");
    int64_t v[4][GR_MAX_RANK];
    const char *keys[4] = {"stride", "padding", "dilation", "output_padding"};
    for (int k = 0; k < 4; k++) {
        int cnt = dc_ints(c, n, k < 3 ? 3 + k : 7, keys[k], v[k]);
        if (cnt != 1 && cnt != nsp)
            dc_fail(c, "argument %s must have %d values", keys[k], nsp);
        for (int i = 0; i < nsp; i++)
            v[k][i] = v[k][cnt == 1 ? 0 : i];
    }
    const int64_t g = (int64_t)dc_num(c, n, 8, "groups", 1);
    out[0] = nsp == 3 ? convt3d_depth_taps(c, x, w, bias, g, v) : convt(c, x, w, bias, g, v);
    return 1;
}
