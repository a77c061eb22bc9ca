/* Rows of test_sim_equivalence.c: trace (or generated program), chip, hash
 * of the program's instructions, cycles with values and timing only.
 * Recorded with `build/tests/test_sim_equivalence --record` from the
 * simulator of commit 3f9ae97, before the host-speed work of issue 16 item 3, and
 * recorded again after merging it with main's compiler changes (the KV-cache
 * scatter changed the *_gen programs): every trace's cycles were first seen
 * equal with the simulator before the merge (spyre run, both chips).
 * Recorded again when the row kernels' cost model counted each DMA's issue,
 * the chunks' pipeline and the operands every core reads alike, and a
 * core's part needed 8 sticks instead of 16 (issue 16 item 2): nine
 * traces' programs changed on both chips (18 rows), none slower, 14 faster
 * (docs/compiler.md, "Row kernels"). */
{"bert_handwritten_small", "spyre", 0x7f55dc71965ba7fbull, 16311.125, 16311.125},
{"bert_handwritten_small", "spyre-4core", 0xdfa414e54b66cf33ull, 17775.875, 17775.875},
{"gpt2_gen/prefill", "spyre", 0x24494da37f6b56b2ull, 35144.375, 40187.25},
{"gpt2_gen/prefill", "spyre-4core", 0x9211ba152fee399cull, 34813.8125, 39856.6875},
{"gpt2_gen/decode", "spyre", 0xaaa28720e1d6a0edull, 33922.699999999997, 33922.699999999997},
{"gpt2_gen/decode", "spyre-4core", 0x41bb7433b1f2bafdull, 33922.699999999997, 33922.699999999997},
{"llama_gen/prefill", "spyre", 0x12d07b5afb6e84d7ull, 43098.1875, 45185.9375},
{"llama_gen/prefill", "spyre-4core", 0xadb39d5a58d56c5bull, 43098.1875, 45185.9375},
{"llama_gen/decode", "spyre", 0xa60c1b4700b14141ull, 32590.637500000004, 32590.637500000004},
{"llama_gen/decode", "spyre-4core", 0x6396f757727aeb81ull, 32590.637500000004, 32590.637500000004},
{"gpt2_small_block_tiny", "spyre", 0x764519c7dc0e33f5ull, 18105.75, 18105.75},
{"gpt2_small_block_tiny", "spyre-4core", 0x09d0584ab0e9556eull, 18105.75, 18105.75},
{"encoder_small", "spyre", 0x0388c56be523d985ull, 18471.9375, 18471.9375},
{"encoder_small", "spyre-4core", 0x19bee4281f6d2a84ull, 18874.4375, 18874.4375},
{"mlp", "spyre", 0xc14da1818dfc597aull, 3458.25, 3458.25},
{"mlp", "spyre-4core", 0xae3d1171e1bcc57aull, 3458.25, 3458.25},
{"llama_tiny", "spyre", 0xaee26315e3ca2f28ull, 23232.375, 23232.375},
{"llama_tiny", "spyre-4core", 0x38777decb1c1b4daull, 23232.375, 23232.375},
{"decoder_small", "spyre", 0x79671909a1b96665ull, 29493.875, 29493.875},
{"decoder_small", "spyre-4core", 0x20a37daf8972f4e7ull, 29493.875, 29493.875},
{"embed_small", "spyre", 0x625eca7f4de6be3aull, 1261.125, 1993.5},
{"embed_small", "spyre-4core", 0x31b0bfb7e883d83aull, 1261.125, 1993.5},
{"transformer_small", "spyre", 0xc16d7b7fffd8eb99ull, 93834.712499999994, 93834.712499999994},
{"transformer_small", "spyre-4core", 0x4c70254eadeb5972ull, 96103.6875, 96103.6875},
{"gemm 1024", "spyre", 0xefdab8eb9eae3467ull, 73581.075000000012, 73581.075000000012},
{"gemm 1024", "spyre-4core", 0x9d523ba7dc5ccef1ull, 455633.625, 455633.625},
{"softmax 512 1024", "spyre", 0xd379cc03bbad89dfull, 22637.625, 22637.625},
{"softmax 512 1024", "spyre-4core", 0x2c5a15ef29ad3803ull, 33512.800700000014, 33512.800700000014},
