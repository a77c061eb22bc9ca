#!/usr/bin/python3
"""tools/conformance ktir DIR [--spyre PATH]: run every KTIR example under DIR
(ktir-cpu's examples/, read in place, never copied) on the simulator and
check its outputs (docs/torch-spyre.md).

For each example this script knows, it writes the inputs (NumPy, a fixed
seed) and the expected outputs computed here with NumPy from the formula
ktir-cpu's own test states for that example (tests/test_examples.py), runs
`spyre run FILE --arg ... --input NAME=FILE ... --check --expected FILE`, and
prints one line:

    NAME: ok | mismatch (detail) | error (reason)

A failure example (ktir-cpu's conftest gives it an exception_msg) is ok when
the run fails with that message.  Then the total, `ktir_examples_pass=N/M`.
An example without an entry here is an error ("no reference").
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def softmax_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp((x - m).astype(np.float32))
    return e / np.sum(e, axis=1, keepdims=True)


def f16(rng, shape):
    return rng.standard_normal(shape).astype(np.float16).astype(np.float32)


PAD = -30.0


def padded_softmax_input(rng, rows, cols):
    # As ktir-cpu's test_softmax_correct: ~76% real columns, the rest -inf.
    x = np.full((rows, cols), PAD, dtype=np.float32)
    real = int(cols * 0.76)
    x[:, :real] = f16(rng, (rows, real))
    return x


def vector_add(rng):
    x, y = f16(rng, 4096), f16(rng, 4096)
    return {"BLOCK_SIZE": 128}, {"x_ptr": x, "y_ptr": y}, {"output_ptr": x + y}


def flat_hbm(size, parts):
    """The flat HBM "hbm" (f16 elements at integer addresses) holding parts {address: array}."""
    m = np.zeros(size, dtype=np.float32)
    for at, arr in parts.items():
        m[at:at + arr.size] = arr.ravel()
    return m


def add_control_flow(rng):
    # RFC 0682's addresses: A at element 1024, B at 12288, C at 18432, 96x64 each.
    a, b = f16(rng, (96, 64)), f16(rng, (96, 64))
    before = flat_hbm(18432 + 6144, {1024: a, 12288: b})
    return {}, {"hbm": before}, {"hbm": flat_hbm(18432 + 6144, {1024: a, 12288: b, 18432: a + b})}


def softmax_small(rng):
    x = padded_softmax_input(rng, 64, 64)
    return {"n_rows": 64}, {"input_ptr": x}, {"output_ptr": softmax_rows(x)}


def softmax_fwd(rng):
    x = padded_softmax_input(rng, 4096, 1024)
    args = {"input_row_stride": 1024, "output_row_stride": 1024, "n_rows": 4096, "BLOCK_SIZE": 1024, "n_cols": 1024}
    return args, {"input_ptr": x}, {"output_ptr": softmax_rows(x)}


def matmul_fwd(rng):
    a, b = f16(rng, (64, 2048)), f16(rng, (2048, 8192))
    args = {"K": 2048, "BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 512, "BLOCK_SIZE_K": 128}
    return args, {"a_ptr": a, "b_ptr": b}, {"c_ptr": a @ b}


def rmsnorm_4x1(rng):
    x = f16(rng, (256, 4096))
    w = np.tile(rng.uniform(0.5, 1.5, size=4096).astype(np.float16).astype(np.float32), (256, 1))
    rms = np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=1, keepdims=True) + 1e-5)
    args = {"X": 0, "Y": 2097152, "W": 1048576, "N": 4096, "eps": 1e-5, "BLOCK_SIZE": 1024}
    size = 3 * 1048576
    before = flat_hbm(size, {0: x, 1048576: w})
    return args, {"hbm": before}, {"hbm": flat_hbm(size, {0: x, 1048576: w, 2097152: x / rms * w})}


def ring_reduce(rng):
    rows = rng.uniform(1.0, 2.0, size=(4, 128)).astype(np.float16).astype(np.float32)
    size = 512 + 128
    return ({"in_ptr": 0, "out_ptr": 512}, {"hbm": flat_hbm(size, {0: rows})},
            {"hbm": flat_hbm(size, {0: rows, 512: rows.sum(axis=0)})})


def scalar_broadcast(rng):
    v = f16(rng, (1, 1))
    return {}, {"in_ptr": v}, {"out_ptr": np.full((4, 64), v[0, 0], dtype=np.float32)}


def reduce_generic(rng):
    # ktir-cpu's test_reduce_sum: [1, 2, 3, 4] reduced in place to 10 everywhere.
    return {}, {"arg0": np.array([[1, 2, 3, 4]], dtype=np.float32)}, {"arg0": np.full((1, 4), 10.0, dtype=np.float32)}


def reduce_multiop(rng):
    # The values of ktir-cpu's test_reduce_multiop_combiner; the max broadcast in place.
    data = np.array([[0.1, 0.9, 0.3, 0.2, 0.5, 0.05, 0.7, 0.05]], dtype=np.float16).astype(np.float32)
    return {}, {"arg0": data}, {"arg0": np.full((1, 8), data.max(), dtype=np.float32)}


def nested_yield(rng):
    return {}, {}, {"out": np.full(4, 2.0, dtype=np.float32)}


def vector_add_dynamic(rng):
    # ktir-cpu runs it for n_elements 256, 512 and 1024: one run each.
    runs = []
    for n in (256, 512, 1024):
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        runs.append(({"n_elements": n}, {"x_ptr": x, "y_ptr": y}, {"output_ptr": x + y}))
    return runs


def sdpa_2d(rng):
    q, k, v = f16(rng, (32, 64)), f16(rng, (32, 64)), f16(rng, (32, 64))
    s = q @ k.T * 0.125
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return {}, {"q_ptr": q, "k_ptr": k, "v_ptr": v}, {"output_ptr": p / p.sum(axis=1, keepdims=True) @ v}


def distributed_copy(rng):
    # A = [A0 | A1] column halves of s0 each, copied into B (64 x 2*s0); s0 = 16, 32 as ktir-cpu runs it.
    runs = []
    for s0 in (16, 32):
        a = f16(rng, (64, 2 * s0))
        runs.append(({"s0_in": s0}, {"a0_ptr": a[:, :s0].copy(), "a1_ptr": a[:, s0:].copy()}, {"b_ptr": a}))
    return runs


def distributed_copy_rowmerge(rng):
    # A = [A0; A1] row halves of 64 rows, copied into B (128 x s0).
    runs = []
    for s0 in (16, 32):
        a = f16(rng, (128, s0))
        runs.append(({"s0_in": s0}, {"a0_ptr": a[:64].copy(), "a1_ptr": a[64:].copy()}, {"b_ptr": a}))
    return runs


def dl16(x):
    # fp32 values as the chip's DL16 holds them: 9 fraction bits, rounded half away from
    # zero (isa/dl16.c; no value here is outside DL16's range).
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return (((u & 0x7fffffff) + (1 << 13)) >> 14 << 14 | (u & 0x80000000)).astype(np.uint32).view(np.float32)


def distributed_view_copy_rfc(rng):
    # ktir-cpu's test_distributed_view_copy_rfc: A = arange(192 * 64) as f16, rows 0..95 in HBM
    # at element 0, rows 96..127 column-major (strides [1, 64]) in core 0's LX at element
    # 12288, rows 128..191 row-major in core 1's LX at element 16384 (each LX a tensor of
    # its own, lxN_ADDR); both cores copy A whole into B at element 24576.  ktir-cpu checks
    # B == A exactly.  The chip holds f16 data as DL16 (9 fraction bits, f16 has 10), so the
    # f16 values above 1024 that DL16 lacks are rounded once, when written in; the copy moves
    # bits (dma, ring.send, sfp.rst), so B is exactly A as DL16 holds it.
    a = np.arange(192 * 64, dtype=np.float16).astype(np.float32).reshape(192, 64)
    lx0 = np.zeros(31 + 63 * 64 + 1, dtype=np.float32)
    for i in range(32):
        lx0[i + 64 * np.arange(64)] = a[96 + i]
    size = 24576 + 192 * 64
    return ({}, {"hbm": flat_hbm(size, {0: a[:96]}), "lx0_12288": lx0, "lx1_16384": a[128:].copy()},
            {"hbm": dl16(flat_hbm(size, {0: a[:96], 24576: a}))})


def ring_reduce_inner_loop(rng):
    rows = rng.uniform(0.5, 1.5, size=(4, 128)).astype(np.float16).astype(np.float32)
    size = 512 + 128
    return ({"in_ptr": 0, "out_ptr": 512, "n_iters": 3}, {"hbm": flat_hbm(size, {0: rows})},
            {"hbm": flat_hbm(size, {0: rows, 512: rows.sum(axis=0) * 3})})


def ring_reduce_multi_group(rng):
    rows = rng.uniform(1.0, 2.0, size=(16, 128)).astype(np.float16).astype(np.float32)
    size = 2048 + 4 * 128
    sums = rows.reshape(4, 4, 128).sum(axis=1)
    return ({"in_ptr": 0, "out_ptr": 2048}, {"hbm": flat_hbm(size, {0: rows})},
            {"hbm": flat_hbm(size, {0: rows, 2048: sums})})


def rope_fwd(rng):
    h, s, d = 40, 4096, 128
    freqs = 10000.0 ** (-np.arange(d // 2).astype(np.float64) * 2.0 / d)
    angles = np.outer(np.arange(s, dtype=np.float64), freqs)
    cos = np.cos(angles).astype(np.float16).astype(np.float32)
    sin = np.sin(angles).astype(np.float16).astype(np.float32)
    x = f16(rng, (h * s, d))
    x3 = x.reshape(h, s, d)
    first, second = x3[:, :, :d // 2], x3[:, :, d // 2:]
    y = np.concatenate([first * cos - second * sin, first * sin + second * cos], axis=-1).reshape(h * s, d)
    return {}, {"x_ptr": x, "cos_ptr": cos, "sin_ptr": sin}, {"out_ptr": y}


def ffn_swiglu(rng):
    x, wg, wu, wd = f16(rng, (1, 64)), f16(rng, (64, 128)), f16(rng, (64, 128)), f16(rng, (128, 64))
    return {}, {"x_ptr": x, "w_gate_ptr": wg, "w_up_ptr": wu, "w_down_ptr": wd}, {"out_ptr": ffn_reference(x, wg, wu, wd)}


def ffn_reference(x, wg, wu, wd):
    gate, up = x @ wg, x @ wu
    return x + (gate / (1.0 + np.exp(-gate)) * up) @ wd


def ffn_swiglu_4core(rng):
    seq, dm, df = 4, 256, 1024
    x, wg, wu, wd = f16(rng, (seq, dm)), f16(rng, (dm, df)), f16(rng, (dm, df)), f16(rng, (df, dm))
    at = {"x_ptr": 0, "w_gate_ptr": 1024, "w_up_ptr": 263168, "w_down_ptr": 525312, "out_ptr": 787456}
    parts = {0: x, 1024: wg, 263168: wu, 525312: wd}
    size = 787456 + seq * dm
    after = dict(parts)
    after[787456] = ffn_reference(x, wg, wu, wd)
    return at, {"hbm": flat_hbm(size, parts)}, {"hbm": flat_hbm(size, after)}


def matmul_small(rng):
    a, b = f16(rng, (16, 64)), f16(rng, (64, 64))
    args = {"K": 64, "BLOCK_SIZE_M": 8, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32}
    return args, {"a_ptr": a, "b_ptr": b}, {"c_ptr": a @ b}


def layernorm(rng):
    rows, n = 1151, 8192
    x, w, b = f16(rng, (rows, n)), f16(rng, (rows, n)), f16(rng, (rows, n))
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + 1e-5)
    y = (x - mean[:, None]) * rstd[:, None] * w + b
    return ({"N": n, "eps": 1e-5, "BLOCK_SIZE": 1024}, {"X": x, "W": w, "B": b},
            {"Y": y, "Mean": mean, "Rstd": rstd})


def indexed_add(rng):
    # ktir-cpu's test: output[g0, :, g1, :] = x[index[g0], 0:32, g1, :] + y[g0, :, g1, :], index = [3, 7]
    x, y = f16(rng, (128, 64, 8, 128)), f16(rng, (2, 32, 8, 128))
    index = np.array([3, 7], dtype=np.float32)
    return ({"dim1_start": 0}, {"x_ptr": x, "y_ptr": y, "index_ptr": index},
            {"output_ptr": x[[3, 7], 0:32] + y})


def indirect_access_copy(rng):
    # RFC 0682's addresses: X (64 x 64 f16) at element 0, Y at element 192 (overlapping X: the
    # tile is loaded whole before it is stored), IDX1 and IDX2 (64 x 64 i32) at 64 and 128,
    # each integer view a tensor of its own (hbm_int_ADDR).  ktir-cpu's test seeds zeros;
    # here random indices, Y[m, k] = X[IDX1[m, k], IDX2[m, k]].
    x = f16(rng, (64, 64))
    i1, i2 = rng.integers(0, 64, size=(2, 64, 64))
    size = 192 + 64 * 64
    y = x[i1, i2]
    return ({}, {"hbm": flat_hbm(size, {0: x}), "hbm_int_64": i1.astype(np.float32), "hbm_int_128": i2.astype(np.float32)},
            {"hbm": flat_hbm(size, {0: x, 192: y})})


def indirect_scatter(rng):
    # RFC 0682's addresses as indirect-access-copy.mlir's: X at element 0, Y at 192 (X is
    # loaded whole before the store), IDX1 and IDX2 at 64 and 128.  ktir-cpu's test seeds
    # zeros; here random indices, so some collide: Y[IDX1[m, k], IDX2[m, k]] = X[m, k] in
    # row-major (m, k) order, the last writer kept, as ktir-cpu's collision test states.
    x = f16(rng, (64, 64))
    i1, i2 = rng.integers(0, 64, size=(2, 64, 64))
    size = 192 + 64 * 64
    before = flat_hbm(size, {0: x})
    y = before[192:].reshape(64, 64).copy()
    for m in range(64):
        for k in range(64):
            y[i1[m, k], i2[m, k]] = x[m, k]
    return ({}, {"hbm": before, "hbm_int_64": i1.astype(np.float32), "hbm_int_128": i2.astype(np.float32)},
            {"hbm": flat_hbm(size, {0: x, 192: y})})


def paged_attention(rng):
    # ktir-cpu's test: tokens 8, 32 query heads over 8 KV heads (4 each), head size 128, KV
    # pages of 16 tokens through block_tables, context 120, 8 KV tiles; its formula for every
    # query block (pid0) and KV head (pid1), not only the first: output rows 2*pid0 .. +2,
    # heads 4*pid1 .. +4 are softmax(Q K^T * scale, causal) V, where key column s is masked
    # when s > 120 + 2*pid0 + row // 4.
    query, kc, vc = f16(rng, (8, 32, 128)), f16(rng, (64, 16, 8, 128)), f16(rng, (64, 16, 8, 128))
    bt = rng.integers(0, 64, size=(1, 16))
    scale, tiles, ctx = 0.08838834764831843, 8, 120
    out = np.zeros((8, 32, 128))
    for p0 in range(4):
        for p1 in range(8):
            q = query[2 * p0:2 * p0 + 2, 4 * p1:4 * p1 + 4].reshape(8, 128).astype(np.float64)
            k = np.concatenate([kc[bt[0, j], :, p1, :] for j in range(tiles)]).astype(np.float64)
            v = np.concatenate([vc[bt[0, j], :, p1, :] for j in range(tiles)]).astype(np.float64)
            s = q @ k.T * scale
            s[np.arange(tiles * 16)[None, :] > ctx + 2 * p0 + np.arange(8)[:, None] // 4] = -np.inf
            p = np.exp(s - s.max(axis=1, keepdims=True))
            out[2 * p0:2 * p0 + 2, 4 * p1:4 * p1 + 4] = (p / p.sum(axis=1, keepdims=True) @ v).reshape(2, 4, 128)
    args = {"cur_batch_start_index": 0, "block_table_offset": 0, "num_tiles": tiles, "context_len": ctx, "scale": scale}
    return (args, {"query_ptr": query, "key_cache_ptr": kc, "value_cache_ptr": vc, "block_tables_ptr": bt.astype(np.float32)},
            {"output_ptr": out.astype(np.float32)})


def sdpa_pv_ksplit(rng):
    a, b = f16(rng, (1, 8192)), f16(rng, (8192, 128))
    return {}, {"a_ptr": a, "b_ptr": b}, {"c_ptr": a @ b}


# ktir-cpu's test tolerances (rtol, atol) where they differ from its usual
# rtol = atol = 1e-2.  They bound fp16 rounding (10 fraction bits) in its
# interpreter; the chip rounds every intermediate to DL16 (9 fraction bits),
# twice the error per rounding, so every check here uses twice ktir-cpu's
# tolerance (DL16_FACTOR).
KTIR_CPU_TOLERANCE = {"matmul_fwd_ktir.mlir": (2e-2, 2e-1), "ffn_swiglu.mlir": (5e-2, 5e-2),
                      "sdpa_pv_ksplit.mlir": (2e-2, 2e-1), "ffn_swiglu_4core.mlir": (1.5e-1, 2.0),
                      "nested_yield.ktir": (1e-5, 1e-5), "vector_add_dynamic_ktir.mlir": (1e-5, 1e-5),
                      "distributed-view-copy.mlir": (0.0, 0.0)}
DL16_FACTOR = 2

# example file name -> inputs/expected maker, or the failure message expected
EXAMPLES = {
    "vector_add_ktir.mlir": vector_add,
    "add-with-control-flow.mlir": add_control_flow,
    "softmax_small.mlir": softmax_small,
    "softmax_fwd_ktir.mlir": softmax_fwd,
    "matmul_fwd_ktir.mlir": matmul_fwd,
    "rmsnorm_4core_4x1.mlir": rmsnorm_4x1,
    "rmsnorm_4core_2x2.mlir": rmsnorm_4x1,
    "ring_reduce.mlir": ring_reduce,
    "scalar_broadcast.mlir": scalar_broadcast,
    "reduce_generic.mlir": reduce_generic,
    "reduce_multiop.mlir": reduce_multiop,
    "nested_yield.ktir": nested_yield,
    "sdpa_2d.mlir": sdpa_2d,
    "distributed-view-copy-dynamic.mlir": distributed_copy,
    "distributed-view-copy-rowmerge-dynamic.mlir": distributed_copy_rowmerge,
    "distributed-view-copy.mlir": distributed_view_copy_rfc,
    "vector_add_dynamic_ktir.mlir": vector_add_dynamic,
    "softmax_small_explicit.mlir": softmax_small,
    "ring_reduce_inner_loop.mlir": ring_reduce_inner_loop,
    "ring_reduce_multi_group.mlir": ring_reduce_multi_group,
    "rope_fwd_4x2.mlir": rope_fwd,
    "ffn_swiglu.mlir": ffn_swiglu,
    "sdpa_pv_ksplit.mlir": sdpa_pv_ksplit,
    "ffn_swiglu_4core.mlir": ffn_swiglu_4core,
    "matmul_small.mlir": matmul_small,
    "layernorm_fwd_ktir.mlir": layernorm,
    "indexed_add.mlir": indexed_add,
    "paged_attention.mlir": paged_attention,
    "indirect-access-copy.mlir": indirect_access_copy,
    "indirect-scatter.mlir": indirect_scatter,
    "softmax_wide.mlir": "LX scratchpad overflow",
    # ktir-cpu's tests/test_spec_gaps.py marks both xfail(strict=True): the
    # one ktdp.load of a 4x8x2048x128 f16 tile (16 MB) exceeds the 2 MB LX.
    "paged-tensor-copy.mlir": "LX scratchpad overflow",
    "paged-tensor-write.mlir": "LX scratchpad overflow",
}


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def run_one(spyre, path, maker, tmp):
    name = os.path.basename(path)
    if isinstance(maker, str):
        r = subprocess.run([spyre, "run", path], capture_output=True, text=True, timeout=600)
        if r.returncode != 0 and maker in r.stderr:
            return "ok", "fails as expected: " + r.stderr.strip().splitlines()[-1]
        return "mismatch", "expected the failure '%s', got exit %d" % (maker, r.returncode)
    runs = maker(np.random.default_rng(42))
    results = [run_case(spyre, path, case, tmp) for case in (runs if isinstance(runs, list) else [runs])]
    bad = [r for r in results if r[0] != "ok"]
    return bad[0] if bad else ("ok", " ".join(r[1] for r in results))


def run_case(spyre, path, case, tmp):
    name = os.path.basename(path)
    cmd = [spyre, "run", path]
    args, inputs, expected = case
    # ktir-cpu's conftest gives some examples arguments their function does not take.
    sig = re.search(r"func\.func\s+@\w+\s*\((.*?)\)", open(path).read(), re.S)
    params = set(re.findall(r"%(\w+)\s*:", sig.group(1))) if sig else set()
    for k, v in args.items():
        if k not in params:
            continue
        cmd += ["--arg", "%s=%s" % (k, v)]
    for k, v in inputs.items():
        f = os.path.join(tmp, name + "." + k + ".f32")
        np.ascontiguousarray(v, dtype=np.float32).tofile(f)
        cmd += ["--input", "%s=%s" % (k, f)]
    exp = os.path.join(tmp, name + ".expected.safetensors")
    write_safetensors(exp, expected)
    rtol, atol = (DL16_FACTOR * t for t in KTIR_CPU_TOLERANCE.get(name, (1e-2, 1e-2)))
    cmd += ["--rtol", str(rtol), "--atol", str(atol)]
    r = subprocess.run(cmd + ["--check", "--expected", exp], capture_output=True, text=True, timeout=600)
    cycles = next((l.split()[0] for l in r.stdout.splitlines() if l.startswith("cycles=")), "")
    if r.returncode == 0:
        return "ok", cycles
    if r.returncode == 1:
        bad = [l for l in r.stdout.splitlines() if "MISMATCH" in l or "worst" in l]
        return "mismatch", "; ".join(bad)
    return "error", (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]


def main(argv):
    if len(argv) < 3 or argv[1] != "ktir":
        sys.stderr.write("usage: tools/conformance ktir DIR [--spyre PATH]\n")
        return 2
    spyre = argv[argv.index("--spyre") + 1] if "--spyre" in argv else os.path.join(ROOT, "build", "spyre")
    files = []
    for d, _, names in os.walk(argv[2]):
        files += [os.path.join(d, n) for n in names if n.endswith((".mlir", ".ktir"))]
    passed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(files):
            maker = EXAMPLES.get(os.path.basename(path))
            rel = os.path.relpath(path, argv[2])
            if maker is None:
                r = subprocess.run([spyre, "run", path], capture_output=True, text=True, timeout=600)
                why = (r.stderr.strip().splitlines() or ["runs, but"])[-1]
                print("%s: error (%s; no reference here)" % (rel, why.replace(path, "").lstrip(":")))
                continue
            status, detail = run_one(spyre, path, maker, tmp)
            passed += status == "ok"
            print("%s: %s (%s)" % (rel, status, detail))
    print("ktir_examples_pass=%d/%d" % (passed, len(files)))
    return 0 if files and passed == len(files) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
