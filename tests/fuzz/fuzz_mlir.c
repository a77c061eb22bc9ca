/* fuzz_mlir: the MLIR text parser (mlir/).  Any input parses or fails with
 * one line naming the file; nothing else (a crash, a leak, a message of
 * two lines) is allowed. */
#include <stdlib.h>
#include <string.h>
#include "fuzzutil.h"
#include "mlir.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = 0;
    char err[512] = "";
    ml_module *m = ml_parse(text, size, "fuzz.mlir", err, sizeof err);
    if (!m && (strncmp(err, "fuzz.mlir:", 10) != 0 || strchr(err, '\n')))
        abort();
    ml_free(m);
    free(text);
    return 0;
}
