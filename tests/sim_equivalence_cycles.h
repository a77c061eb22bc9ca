/* Rows of test_sim_equivalence.c: trace (or generated program), chip, hash
 * of the program's instructions, cycles with values and timing only.
 * Recorded with `build/tests/test_sim_equivalence --record` from the
 * simulator of commit 3f9ae97, before the host-speed work of issue 16 item 3, and
 * recorded again after merging it with main's compiler changes (the KV-cache
 * scatter changed the *_gen programs): every trace's cycles were first seen
 * equal with the simulator before the merge (spyre run, both chips);
 * and again after batched products split their batch over the cores
 * (branch perf: every trace's cycles fell or stayed, by up to 17%);
 * and again after merging that with the estimate branch's row kernels and
 * the simspeed branch's simulator: the same rows from this simulator and
 * from commit d26e011's sim/ built with the merged compiler (session 9).
 * Recorded again after the attention scores stayed in LX (branch attn:
 * batched products aligned with their A's writer, kept tensors that
 * share a region, smaller tilings that make room): every trace's cycles
 * fell or stayed, by up to 15.4% (encoder_small on spyre-4core).
 * And after a row kernel staged a buffer once a chunk for all its loads
 * (rotate_half's x and x shifted): llama_tiny 3.7% and 10.8%, llama_gen
 * prefill 6.1% and 4.8% faster, the others equal.
 * Recorded again after merging the decode (a row kernel's loads the same
 * for every row read once a chunk), mm, compile and simspeed branches of
 * session 10 (bert_handwritten_small 4.8% and 10.5%, transformer_small
 * 0.7% and 5.6% faster, the others equal): the same rows from this
 * simulator and from main's sim/ before simspeed, built with the merged
 * compiler. */
{"bert_handwritten_small", "spyre", 0x6de4004f17048d0eull, 14077.6875, 14077.6875},
{"bert_handwritten_small", "spyre-4core", 0x2e0d3632afbf032eull, 13381.625, 13381.625},
{"gpt2_gen/prefill", "spyre", 0xe76f2d2d252f11b6ull, 33873.6875, 38770.5625},
{"gpt2_gen/prefill", "spyre-4core", 0x5e1ca6029d03ddecull, 32878.3125, 37576.637499999997},
{"gpt2_gen/decode", "spyre", 0x1a8593a892d20c8cull, 32824.137500000004, 32824.137500000004},
{"gpt2_gen/decode", "spyre-4core", 0x2c052fc651bf1ab4ull, 32824.137500000004, 32824.137500000004},
{"llama_gen/prefill", "spyre", 0xe3f71624d2513d2full, 36502.8125, 39326.9375},
{"llama_gen/prefill", "spyre-4core", 0x789cd806159041e3ull, 35453.125, 39326.9375},
{"llama_gen/decode", "spyre", 0x3277f01defb61992ull, 30759.700000000004, 30759.700000000004},
{"llama_gen/decode", "spyre-4core", 0x667cc2d748efdc32ull, 30759.700000000004, 30759.700000000004},
{"gpt2_small_block_tiny", "spyre", 0x8fcb9b10d5ed49e7ull, 16274.8125, 16274.8125},
{"gpt2_small_block_tiny", "spyre-4core", 0x6b73d492a20c0b66ull, 15908.625, 15908.625},
{"encoder_small", "spyre", 0x1efc17a9621441f6ull, 15176.25, 15176.25},
{"encoder_small", "spyre-4core", 0x0a61f160768276d0ull, 14077.6875, 14077.6875},
{"mlp", "spyre", 0xc14da1818dfc597aull, 3458.25, 3458.25},
{"mlp", "spyre-4core", 0xae3d1171e1bcc57aull, 3458.25, 3458.25},
{"llama_tiny", "spyre", 0xe3976572ab0b0566ull, 19204.3125, 19204.3125},
{"llama_tiny", "spyre-4core", 0x5053a4e4c724e01dull, 18105.75, 18105.75},
{"decoder_small", "spyre", 0x26b86031ab0ef828ull, 22536.3125, 22536.3125},
{"decoder_small", "spyre-4core", 0x29f3e7587be354b8ull, 22536.3125, 22536.3125},
{"embed_small", "spyre", 0x625eca7f4de6be3aull, 1261.125, 1993.5},
{"embed_small", "spyre-4core", 0x31b0bfb7e883d83aull, 1261.125, 1993.5},
{"transformer_small", "spyre", 0x22050d6260e7c7e8ull, 76793.1875, 76793.1875},
{"transformer_small", "spyre-4core", 0xb4e4366934156cceull, 73033.875, 73033.875},
{"gemm 1024", "spyre", 0xefdab8eb9eae3467ull, 73581.075000000012, 73581.075000000012},
{"gemm 1024", "spyre-4core", 0x9d523ba7dc5ccef1ull, 455633.625, 455633.625},
{"softmax 512 1024", "spyre", 0xd379cc03bbad89dfull, 22637.625, 22637.625},
{"softmax 512 1024", "spyre-4core", 0x2c5a15ef29ad3803ull, 33512.800700000014, 33512.800700000014},
