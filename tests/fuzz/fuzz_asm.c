/* fuzz_asm: the assembler (isa/asm.c) on text in memory.  A program that
 * assembles must disassemble to text that assembles to the same program
 * (compared by its disassembly). */
#include "fuzzutil.h"
#include "isa.h"

/* The text assembled and disassembled; NULL if it does not assemble. */
static void *reassemble(const char *text, const char *name, char *err, size_t errlen)
{
    isa_program *p = isa_assemble(text, name, err, errlen);
    if (!p)
        return NULL;
    char *again = isa_disassemble(p);
    isa_program_free(p);
    if (!again)
        fz_fail("isa_disassemble", "returned NULL");
    return again;
}

static const fz_format assembler = {reassemble, "fuzz.s", "disassembly.s", "disassembly", "first disassembly", "second",
    "the disassembly of an assembled program does not assemble",
    "an assembled program reassembles to a different program", "disassemblies differ"};
FZ_ROUND_TRIP_TARGET(assembler)
