/* dl16.c: DL16, IEEE half and bfloat16 conversions, and the host dtypes' rules.
 * DL16 as defined by IBM's NNP data format 1 (see docs/isa.md): rounding adds
 * half a unit in the last place to the magnitude (ties away from zero),
 * values whose biased exponent falls below 0 become signed zero, values
 * beyond the largest finite become NINF, and NINF reads back as NaN. */
#include "isa.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DL16_AVX2 1 /* an AVX2 path, taken when the host has it */
#endif

#define F32_FRAC_BITS 23
#define DL16_FRAC_BITS 9
#define DL16_EXP_BIAS 31
#define F32_EXP_BIAS 127
#define ROUND_BIT (1u << (F32_FRAC_BITS - DL16_FRAC_BITS - 1))
/* Largest fp32 magnitude that still rounds to the largest finite DL16
 * (biased exponent 63, fraction 510). */
#define F32_DL16_MAX ((uint32_t)(63 - DL16_EXP_BIAS + F32_EXP_BIAS) << F32_FRAC_BITS | \
                      (uint32_t)510 << (F32_FRAC_BITS - DL16_FRAC_BITS) | (ROUND_BIT - 1))

/* Branch-free so that loops over whole sticks vectorise. */
static inline uint16_t from_bits(uint32_t u)
{
    uint32_t sign = (u >> 16) & 0x8000u, mag = u & 0x7fffffffu;
    /* adding the rounding bit carries into the exponent when the fraction overflows */
    int32_t v = (int32_t)((mag + ROUND_BIT) >> (F32_FRAC_BITS - DL16_FRAC_BITS)) -
                ((F32_EXP_BIAS - DL16_EXP_BIAS) << DL16_FRAC_BITS);
    v = v < 0 ? 0 : v;                                   /* below the smallest: signed zero */
    v = mag > F32_DL16_MAX ? (int32_t)ISA_DL16_NINF : v; /* too large, infinity or NaN */
    return (uint16_t)(sign | (uint32_t)v);
}

static inline uint32_t to_bits(uint32_t h)
{
    uint32_t sign = (h & 0x8000u) << 16, mag = h & 0x7fffu;
    uint32_t u = sign | (mag + ((uint32_t)(F32_EXP_BIAS - DL16_EXP_BIAS) << DL16_FRAC_BITS))
                            << (F32_FRAC_BITS - DL16_FRAC_BITS);
    u = mag == 0 ? sign : u;
    return mag == ISA_DL16_NINF ? 0x7fc00000u : u; /* NINF reads as NaN */
}

/* Finite v rounding beyond ISA_DL16_MAX, by the conversion's own rule
 * (asked of every element an upload writes: no value up to the largest
 * finite rounds past it, so only those beyond it are converted). */
int isa_dl16_beyond(double v)
{
    return fabs(v) > ISA_DL16_MAX && isfinite(v) &&
           (fabs(v) > FLT_MAX || (isa_dl16_from_f32((float)v) & 0x7fffu) == ISA_DL16_NINF);
}

float isa_dl16_standin(float v)
{
    if (isinf(v))
        return v < 0 ? -ISA_DL16_INF : ISA_DL16_INF;
    if (isa_dl16_beyond(v))
        return v < 0 ? -ISA_DL16_BIG : ISA_DL16_BIG;
    return v;
}

uint16_t isa_dl16_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return from_bits(u);
}

float isa_dl16_to_f32(uint16_t h)
{
    uint32_t u = to_bits(h);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#if defined(__SSE2__)
/* The branch-free rules of to_bits and from_bits on SSE2 (the x86-64
 * baseline; compilers vectorise the scalar loops with mask shuffles between
 * 16- and 32-bit lanes, more work).  The same rules lane for lane, so the
 * same bits (test_isa compares them with the scalar ones). */
/* Eight DL16 lanes to eight fp32 words, the rule of to_bits computed on
 * the words' 16-bit halves: the high half is sign | (mag >> 2) + rebias >> 2
 * (exact: the rebias has no low bits), the low half the fraction's last two
 * bits; zero keeps only the sign, NINF becomes 0x7fc00000. */
static inline void to_bits8(__m128i h, __m128i *lo4, __m128i *hi4)
{
    const __m128i mag = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
    const __m128i sign = _mm_and_si128(h, _mm_set1_epi16((short)0x8000));
    const __m128i ninf = _mm_cmpeq_epi16(mag, _mm_set1_epi16(ISA_DL16_NINF));
    __m128i hi = _mm_add_epi16(_mm_srli_epi16(mag, 2),
                               _mm_set1_epi16(((F32_EXP_BIAS - DL16_EXP_BIAS) << DL16_FRAC_BITS) >> 2));
    hi = _mm_or_si128(sign, _mm_andnot_si128(_mm_cmpeq_epi16(mag, _mm_setzero_si128()), hi));
    hi = _mm_or_si128(_mm_andnot_si128(ninf, hi), _mm_and_si128(ninf, _mm_set1_epi16(0x7fc0)));
    const __m128i lo = _mm_andnot_si128(ninf, _mm_slli_epi16(mag, F32_FRAC_BITS - DL16_FRAC_BITS));
    *lo4 = _mm_unpacklo_epi16(lo, hi);
    *hi4 = _mm_unpackhi_epi16(lo, hi);
}

/* Four fp32 words to their DL16 magnitudes (0 .. NINF, sign apart), the
 * rule of from_bits: the sign is packed separately, so both packs below
 * stay inside int16 and saturate nothing. */
static inline __m128i from_mag4(__m128i u)
{
    const __m128i mag = _mm_and_si128(u, _mm_set1_epi32(0x7fffffff));
    __m128i v = _mm_srli_epi32(_mm_add_epi32(mag, _mm_set1_epi32(ROUND_BIT)), F32_FRAC_BITS - DL16_FRAC_BITS);
    v = _mm_sub_epi32(v, _mm_set1_epi32((F32_EXP_BIAS - DL16_EXP_BIAS) << DL16_FRAC_BITS));
    v = _mm_andnot_si128(_mm_cmpgt_epi32(_mm_setzero_si128(), v), v);
    /* mag < 2^31, so the signed compare is the unsigned one */
    const __m128i big = _mm_cmpgt_epi32(mag, _mm_set1_epi32((int32_t)F32_DL16_MAX));
    return _mm_or_si128(_mm_andnot_si128(big, v), _mm_and_si128(big, _mm_set1_epi32(ISA_DL16_NINF)));
}
#endif

#if defined(DL16_AVX2)
/* to_bits8 on sixteen lanes (the same operations on twice the width: the
 * same bits); the unpacks work within 128-bit halves, so the two results
 * hold elements 0-3, 8-11 and 4-7, 12-15, put in order by the permutes.
 * Returns how many of the n it converted (a multiple of 16). */
__attribute__((target("avx2"))) static size_t to_f32_avx2(const uint16_t *in, uint32_t *o, size_t n)
{
    const __m256i magmask = _mm256_set1_epi16(0x7fff), signmask = _mm256_set1_epi16((short)0x8000);
    const __m256i ninfv = _mm256_set1_epi16(ISA_DL16_NINF), nanhi = _mm256_set1_epi16(0x7fc0);
    const __m256i rebias = _mm256_set1_epi16(((F32_EXP_BIAS - DL16_EXP_BIAS) << DL16_FRAC_BITS) >> 2);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(in + i));
        const __m256i mag = _mm256_and_si256(h, magmask), sign = _mm256_and_si256(h, signmask);
        const __m256i ninf = _mm256_cmpeq_epi16(mag, ninfv);
        __m256i hi = _mm256_add_epi16(_mm256_srli_epi16(mag, 2), rebias);
        hi = _mm256_or_si256(sign, _mm256_andnot_si256(_mm256_cmpeq_epi16(mag, _mm256_setzero_si256()), hi));
        hi = _mm256_or_si256(_mm256_andnot_si256(ninf, hi), _mm256_and_si256(ninf, nanhi));
        const __m256i lo = _mm256_andnot_si256(ninf, _mm256_slli_epi16(mag, F32_FRAC_BITS - DL16_FRAC_BITS));
        const __m256i a = _mm256_unpacklo_epi16(lo, hi), b = _mm256_unpackhi_epi16(lo, hi);
        _mm256_storeu_si256((__m256i *)(void *)(o + i), _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_storeu_si256((__m256i *)(void *)(o + i + 8), _mm256_permute2x128_si256(a, b, 0x31));
    }
    return i;
}

/* The SSE2 rule of isa_dl16_from_f32_n on sixteen lanes (from_mag4's
 * operations on twice the width: the same bits).  The packs work within
 * 128-bit halves, leaving the quarters in the order 0, 2, 1, 3, which the
 * permute restores.  Returns how many of the n it converted (a multiple of
 * 16).  The PT workers round every DL16 product's sums through it. */
__attribute__((target("avx2"))) static size_t from_f32_avx2(const uint32_t *u, uint16_t *out, size_t n)
{
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), round = _mm256_set1_epi32(ROUND_BIT);
    const __m256i rebias = _mm256_set1_epi32((F32_EXP_BIAS - DL16_EXP_BIAS) << DL16_FRAC_BITS);
    const __m256i maxv = _mm256_set1_epi32((int32_t)F32_DL16_MAX), ninf = _mm256_set1_epi32(ISA_DL16_NINF);
    const __m256i signmask = _mm256_set1_epi16((short)0x8000);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i w[2], mag[2];
        for (int h = 0; h < 2; h++) {
            w[h] = _mm256_loadu_si256((const __m256i *)(const void *)(u + i + 8 * h));
            const __m256i m = _mm256_and_si256(w[h], absmask);
            __m256i v = _mm256_srli_epi32(_mm256_add_epi32(m, round), F32_FRAC_BITS - DL16_FRAC_BITS);
            v = _mm256_sub_epi32(v, rebias);
            v = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), v), v);
            const __m256i big = _mm256_cmpgt_epi32(m, maxv); /* m < 2^31: signed is unsigned */
            mag[h] = _mm256_or_si256(_mm256_andnot_si256(big, v), _mm256_and_si256(big, ninf));
        }
        const __m256i sign = _mm256_and_si256(
            _mm256_packs_epi32(_mm256_srai_epi32(w[0], 16), _mm256_srai_epi32(w[1], 16)), signmask);
        const __m256i r = _mm256_or_si256(_mm256_packs_epi32(mag[0], mag[1]), sign);
        _mm256_storeu_si256((__m256i *)(void *)(out + i), _mm256_permute4x64_epi64(r, 0xd8));
    }
    return i;
}
#endif

/* 1: the bulk conversions to and from fp32 take the AVX2 path; 0: the baseline;
 * -1: not decided yet (the host's CPU decides on first use). */
static _Atomic int avx2_on = -1;

int isa_dl16_use_avx2(int allow)
{
#if defined(DL16_AVX2)
    __builtin_cpu_init();
    atomic_store(&avx2_on, allow && __builtin_cpu_supports("avx2"));
#else
    (void)allow;
    atomic_store(&avx2_on, 0);
#endif
    return atomic_load(&avx2_on);
}

/* Is the AVX2 path on (deciding on first use)? */
static int avx2_path(void)
{
    int on = atomic_load_explicit(&avx2_on, memory_order_relaxed);
    return on < 0 ? isa_dl16_use_avx2(1) : on;
}

/* n values, on AVX2 when `avx2` (the host has it), else the baseline. */
static void to_f32_run(const uint16_t *in, uint32_t *o, size_t n, int avx2)
{
    size_t i = 0;
#if defined(DL16_AVX2)
    if (avx2)
        i = to_f32_avx2(in, o, n);
#else
    (void)avx2;
#endif
#if defined(__SSE2__)
    for (; i + 8 <= n; i += 8) {
        __m128i lo, hi;
        to_bits8(_mm_loadu_si128((const __m128i *)(const void *)(in + i)), &lo, &hi);
        _mm_storeu_si128((__m128i *)(void *)(o + i), lo);
        _mm_storeu_si128((__m128i *)(void *)(o + i + 4), hi);
    }
#endif
    for (; i < n; i++)
        o[i] = to_bits(in[i]);
}

void isa_dl16_to_f32_n(const uint16_t *in, float *out, size_t n)
{
    to_f32_run(in, (uint32_t *)(void *)out, n, avx2_path());
}

void isa_dl16_to_f32_rows(const uint16_t *in, size_t in_pitch, float *out, size_t out_pitch, size_t rows, size_t n)
{
    uint32_t *o = (uint32_t *)(void *)out;
    const int avx2 = avx2_path();
    if (in_pitch == n && out_pitch == n) { /* contiguous both sides: one run */
        to_f32_run(in, o, rows * n, avx2);
        return;
    }
    for (size_t r = 0; r < rows; r++)
        to_f32_run(in + r * in_pitch, o + r * out_pitch, n, avx2);
}

void isa_dl16_from_f32_n(const float *in, uint16_t *out, size_t n)
{
    const uint32_t *u = (const uint32_t *)(const void *)in;
    size_t i = 0;
#if defined(DL16_AVX2)
    if (avx2_path())
        i = from_f32_avx2(u, out, n);
#endif
#if defined(__SSE2__)
    for (; i + 8 <= n; i += 8) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(u + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(u + i + 4));
        __m128i mag = _mm_packs_epi32(from_mag4(a), from_mag4(b));
        /* the words' high halves, sign-extended, pack exactly: bit 15 is the sign */
        __m128i sign = _mm_and_si128(_mm_packs_epi32(_mm_srai_epi32(a, 16), _mm_srai_epi32(b, 16)),
                                     _mm_set1_epi16((short)0x8000));
        _mm_storeu_si128((__m128i *)(void *)(out + i), _mm_or_si128(mag, sign));
    }
#endif
    for (; i < n; i++)
        out[i] = from_bits(u[i]);
}

float isa_dl16_round(float f)
{
    return isa_dl16_to_f32(isa_dl16_from_f32(f));
}

float isa_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    int exp = (h >> 10) & 0x1f;
    uint32_t frac = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | frac << 13;
    } else if (exp == 0) {
        if (frac == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                frac <<= 1;
                e++;
            } while (!(frac & 0x400u));
            u = sign | (uint32_t)(127 - 15 - e) << 23 | (frac & 0x3ffu) << 13;
        }
    } else {
        u = sign | (uint32_t)(exp - 15 + 127) << 23 | frac << 13;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t isa_f16_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t mag = u & 0x7fffffffu;
    if (mag >= 0x7f800000u)
        return sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0);
    if (mag >= 0x477ff000u) /* rounds to beyond 65504 */
        return sign | 0x7c00u;
    if (mag < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (mag < 0x33000000u)
            return sign;
        int e = (int)(mag >> 23);
        uint32_t m = (mag & 0x7fffffu) | 0x800000u;
        int drop = 126 - e; /* bits below the 2^-24 unit of a half subnormal */
        uint32_t q = m >> drop;
        uint32_t rem = m & ((1u << drop) - 1), half = 1u << (drop - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
        return sign | (uint16_t)q;
    }
    uint32_t q = mag - 0x38000000u; /* rebias exponent 127 -> 15 */
    uint32_t rem = q & 0x1fffu;
    q >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1)))
        q++;
    return sign | (uint16_t)q;
}

float isa_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t isa_bf16_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* NaN stays a (quiet) NaN */
    /* adding 0x7fff plus the kept lowest bit rounds to nearest even; a carry
     * into the exponent is the right result, up to infinity */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

float isa_host_round(isa_host_dtype hdt, float f)
{
    if (hdt == ISA_HT_F16)
        return isa_f16_to_f32(isa_f16_from_f32(f));
    if (hdt == ISA_HT_BF16)
        return isa_bf16_to_f32(isa_bf16_from_f32(f));
    return f;
}

/* The device narrows DL16 to a 16-bit host dtype by dropping fraction bits
 * (toward zero), as torch-spyre issue 2478 measured for bf16. DL16's range
 * lies inside bf16's, so bf16 never overflows. Beyond fp16's range the rule
 * is assumed: a magnitude of 2^16 or more (including the compiler's 2^30
 * infinity) becomes an infinity, as PyTorch's fp16 cast overflows, and below
 * fp16's normal range the subnormal is truncated. NaN stays NaN. */
float isa_host_from_device(isa_host_dtype hdt, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
    if (hdt == ISA_HT_F32 || mag > 0x7f800000u)
        return f;
    if (hdt == ISA_HT_BF16) {
        u &= 0xffff0000u;
    } else if (mag >= 0x47800000u) { /* 2^16 */
        u = sign | 0x7f800000u;
    } else if (mag < 0x38800000u) { /* below 2^-14: a multiple of 2^-24, toward zero */
        float q = truncf(fabsf(f) * 0x1p24f) * 0x1p-24f;
        memcpy(&u, &q, 4);
        u |= sign;
    } else {
        u &= 0xffffe000u; /* fp16's 10 fraction bits of fp32's 23 */
    }
    memcpy(&f, &u, 4);
    return f;
}

double isa_host_ulp(isa_host_dtype hdt, double f)
{
    if (hdt == ISA_HT_F32 || !isfinite(f))
        return 0;
    int frac = hdt == ISA_HT_F16 ? 10 : 7, emin = hdt == ISA_HT_F16 ? -14 : -126;
    int e;
    frexp(f, &e); /* |f| in [2^(e-1), 2^e) */
    return ldexp(1.0, (f == 0 || e - 1 < emin ? emin : e - 1) - frac);
}
