/* fuzz_asm: the assembler (isa/asm.c) on text in memory.  A program that
 * assembles must disassemble to text that assembles to the same program
 * (compared by its disassembly). */
#include "fuzzutil.h"
#include "isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static char *disassemble(const isa_program *p)
{
    char *text = isa_disassemble(p);
    if (!text)
        fz_fail("isa_disassemble", "returned NULL");
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *src = fz_text(data, size), err[512];
    isa_program *p = isa_assemble(src, "fuzz.s", err, sizeof err);
    free(src);
    if (!p)
        return 0;
    char *first = disassemble(p);
    isa_program_free(p);
    isa_program *again = isa_assemble(first, "disassembly.s", err, sizeof err);
    if (!again) {
        fprintf(stderr, "disassembly:\n%s\n", first);
        fz_fail("the disassembly of an assembled program does not assemble", err);
    }
    char *second = disassemble(again);
    isa_program_free(again);
    if (strcmp(first, second)) {
        fprintf(stderr, "first disassembly:\n%s\nsecond:\n%s\n", first, second);
        fz_fail("an assembled program reassembles to a different program", "disassemblies differ");
    }
    free(first);
    free(second);
    return 0;
}
