#!/usr/bin/python3
"""bench_gen8b: `spyre generate --no-values` on a Llama-3-8B-size whole model
(traces/models/decoder_gen8b.py: prefill of 128 positions, decode steps
over a 1,024-position KV cache), exported graph-only into
$SPYRE_BUILD/traces/llama8b_gen_L<layers> (not stored in the repository).
SPYRE_GEN8B_LAYERS picks fewer layers than 32.  Prints ttft_us, tpot_us
and, last, gen8b_tpot_vs_roofline: the decode step against (weights + the
KV cache it reads) / the DRAM bandwidth of chip/configs/spyre.cfg."""
import os
import re
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.environ.get("SPYRE_BUILD", os.path.join(root, "build"))
layers = int(os.environ.get("SPYRE_GEN8B_LAYERS", "32"))
HIDDEN, KV_DIM, FFN, VOCAB, CONTEXT, ELEM_BYTES = 4096, 8 * 128, 14336, 128256, 1024, 2


def config(key):
    with open(os.path.join(root, "chip", "configs", "spyre.cfg")) as f:
        return float(re.search(rf"^{key}\s*=\s*(\S+)", f.read(), re.M).group(1))


def roofline_us():
    """As bench_serve.c's decode roofline: every layer's linears and norms,
    the LM head, one embedding row, and the whole cache (the decode step
    attends over all CONTEXT positions under a mask)."""
    bw = config("dram_channels") * config("dram_burst_bytes") / (config("dram_burst_tck") * config("dram_tck_ns")) * 1e9
    layer = 2.0 * HIDDEN * HIDDEN + 2.0 * HIDDEN * KV_DIM + 3.0 * HIDDEN * FFN + 2.0 * HIDDEN
    weights = (layers * layer + VOCAB * HIDDEN + 2 * HIDDEN) * ELEM_BYTES
    kv = layers * 2.0 * CONTEXT * KV_DIM * ELEM_BYTES
    print(f"decode_min_bytes={weights + kv:.0f} (weights {weights:.0f} + KV read {kv:.0f}) dram_gb_s={bw / 1e9:.2f}")
    return (weights + kv) / bw * 1e6


def main():
    out = os.path.join(build, "traces", f"llama8b_gen_L{layers}")
    if not os.path.exists(os.path.join(out, "decode", "graph.txt")):
        subprocess.run([sys.executable, os.path.join(root, "traces", "models", "decoder_gen8b.py"), out, str(layers)],
                       check=True)
    cmd = [os.path.join(build, "spyre"), "generate", out, "--prompt", "1,2,3,4,5,6,7,8",
           "--max-new-tokens", "4", "--no-values"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    if p.returncode:
        sys.stderr.write(p.stderr)
        return p.returncode
    tpot = float(re.search(r"tpot_us=(\S+)", p.stdout).group(1))
    bound = roofline_us()
    print(f"layers={layers}\ndecode_roofline_us={bound:.1f}\ngen8b_tpot_vs_roofline={tpot / bound:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
