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
 * from commit d26e011's sim/ built with the merged compiler (session 9);
 * bert_handwritten_small and transformer_small again after row kernels
 * staged a tile the innermost row loop does not move (branch decode, the
 * simulator unchanged; the cycles the same as `spyre run` gives). */
{"bert_handwritten_small", "spyre", 0xa3ec68aaa56dd36aull, 14443.875, 14443.875},
{"bert_handwritten_small", "spyre-4core", 0x3b9357da9e763c6eull, 14949.324999999997, 14949.324999999997},
{"gpt2_gen/prefill", "spyre", 0xe76f2d2d252f11b6ull, 33873.6875, 38770.5625},
{"gpt2_gen/prefill", "spyre-4core", 0x086f6acd1ed63fd4ull, 33244.5, 38038.1875},
{"gpt2_gen/decode", "spyre", 0xaaa28720e1d6a0edull, 33922.699999999997, 33922.699999999997},
{"gpt2_gen/decode", "spyre-4core", 0x41bb7433b1f2bafdull, 33922.699999999997, 33922.699999999997},
{"llama_gen/prefill", "spyre", 0x91740f12c54fa2fdull, 39438.0625, 42978.3125},
{"llama_gen/prefill", "spyre-4core", 0x3e9346c01f4aa29dull, 39071.875, 41524.0625},
{"llama_gen/decode", "spyre", 0xa60c1b4700b14141ull, 32590.637500000004, 32590.637500000004},
{"llama_gen/decode", "spyre-4core", 0x6396f757727aeb81ull, 32590.637500000004, 32590.637500000004},
{"gpt2_small_block_tiny", "spyre", 0x9db643fad729c860ull, 16641, 16641},
{"gpt2_small_block_tiny", "spyre-4core", 0x83e323c743d2cd87ull, 16274.8125, 16274.8125},
{"encoder_small", "spyre", 0x1db866c2e531df46ull, 15944.9375, 15944.9375},
{"encoder_small", "spyre-4core", 0xc5f22f2db61ea633ull, 16641, 16641},
{"mlp", "spyre", 0xc14da1818dfc597aull, 3458.25, 3458.25},
{"mlp", "spyre-4core", 0xae3d1171e1bcc57aull, 3458.25, 3458.25},
{"llama_tiny", "spyre", 0x2b9333ca88e5c060ull, 20302.875, 20302.875},
{"llama_tiny", "spyre-4core", 0x6a537e16a4e35b46ull, 20302.875, 20302.875},
{"decoder_small", "spyre", 0x609843d8d63032e9ull, 24001.0625, 24001.0625},
{"decoder_small", "spyre-4core", 0x0f98d42bf3d447dfull, 24703.4375, 24703.4375},
{"embed_small", "spyre", 0x625eca7f4de6be3aull, 1261.125, 1993.5},
{"embed_small", "spyre-4core", 0x31b0bfb7e883d83aull, 1261.125, 1993.5},
{"transformer_small", "spyre", 0x1a10aff485b08554ull, 80723.8125, 80723.8125},
{"transformer_small", "spyre-4core", 0xfbfe1ce0a78813d3ull, 79259.0625, 79259.0625},
{"gemm 1024", "spyre", 0xefdab8eb9eae3467ull, 73581.075000000012, 73581.075000000012},
{"gemm 1024", "spyre-4core", 0x9d523ba7dc5ccef1ull, 455633.625, 455633.625},
{"softmax 512 1024", "spyre", 0xd379cc03bbad89dfull, 22637.625, 22637.625},
{"softmax 512 1024", "spyre-4core", 0x2c5a15ef29ad3803ull, 33512.800700000014, 33512.800700000014},
