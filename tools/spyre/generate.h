/* generate.h: `spyre generate` as main.c's command table sees it
 * (generate.c: greedy or sampled token generation with a model's prefill and decode
 * steps, the KV cache resident on the device; docs/serving.md). */
#ifndef SPYRE_GENERATE_H
#define SPYRE_GENERATE_H

extern const char generate_usage[];
extern const char generate_help[];
int cmd_generate(int argc, char **argv);

#endif
