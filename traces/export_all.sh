#!/bin/sh
# traces/export_all.sh: export the small workloads of traces/models/ into
# traces/NAME/ (graph.txt and the safetensors files; see traces/README.md).
# Runs with the system interpreter, which has Debian's python3-torch.
# The large workloads (bert_base, bert_handwritten, gpt2_block,
# llama_8b_layer) are not exported here: see traces/README.md.
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
python=${PYTHON:-/usr/bin/python3}

export_one() {  # FILE.py FUNC
    echo "traces/$2"
    "$python" "$root/tools/export.py" "$here/models/$1:$2" -o "$here/$2"
}

export_one mlp.py mlp
export_one encoder.py encoder_small
export_one encoder.py bert_handwritten_small
export_one gpt2.py gpt2_small_block_tiny
export_one llama.py llama_tiny
export_one decoder.py decoder_small
export_one embedding.py embed_small
export_one transformer.py transformer_small

# Whole decoder-only models (decoder_gen.py): a prefill step and a decode
# step sharing the prefill's weights file, and PyTorch's own greedy
# generation of the model (expected_tokens.txt, for tests/test_generate.c).
export_steps() {  # MODEL
    echo "traces/$1_gen"
    "$python" "$root/tools/export.py" "$here/models/decoder_gen.py:$1_gen_prefill" -o "$here/$1_gen/prefill"
    "$python" "$root/tools/export.py" "$here/models/decoder_gen.py:$1_gen_decode" -o "$here/$1_gen/decode" \
        --weights ../prefill/weights.safetensors
    "$python" "$here/models/decoder_gen.py" tokens "$1" "$here/$1_gen/expected_tokens.txt"
}

export_steps llama
export_steps gpt2

# A causal LM as users write it (nanogpt_gen.py), exported for generation
# without a KV cache (--generate: one step over the whole context), and
# PyTorch's own greedy generation of it.
echo "traces/nanogpt_gen"
"$python" "$root/tools/export.py" "$here/models/nanogpt_gen.py:nanogpt_gen" -o "$here/nanogpt_gen" --generate 48
"$python" "$here/models/nanogpt_gen.py" tokens "$here/nanogpt_gen/expected_tokens.txt"

# An encoder-decoder as users write it (seq2seq_gen.py, BART style), exported
# for generation from a source (--generate with its three inputs: one step
# over the source, padded to 16, and the whole decoder context), and
# PyTorch's own greedy generation of it.
echo "traces/seq2seq_gen"
"$python" "$root/tools/export.py" "$here/models/seq2seq_gen.py:seq2seq_gen" -o "$here/seq2seq_gen" --generate 32 \
    --source-len 16
"$python" "$here/models/seq2seq_gen.py" tokens "$here/seq2seq_gen/expected_tokens.txt"

# A whole tiny Llama-style model's serving step graphs (llama_serve.py,
# graph only) at a grid of shapes, for tests/test_serve.c.
echo "traces/serve_tiny"
rm -rf "$here/serve_tiny"
"$python" "$here/models/llama_serve.py" grid "$here/serve_tiny" tiny 256 64 1,2,4 64,128,256 1,2,4
