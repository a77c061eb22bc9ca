/* fuzz_elf: the ELF program reader (isa/elf.c), which takes a path, so
 * each input is written to a scratch file first, and the disassembler
 * (isa/asm.c) on every program that reads.  The disassembly must assemble
 * back to a program that disassembles to the same text (`spyre dis`
 * promises output that reassembles), less the "# kernel ..." notes on
 * kernels the text cannot express (overlapping ones, say), which the
 * reassembled program no longer has. */
#include "fuzzutil.h"
#include "isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text without its "# kernel ..." lines. */
static char *without_kernel_notes(const char *text)
{
    char *out = fz_text((const uint8_t *)text, strlen(text)), *o = out;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, "# kernel ", 9)) {
            memcpy(o, line, n);
            o += n;
        }
        line += n;
    }
    *o = 0;
    return out;
}

static void check_reassembles(const char *text)
{
    char err[512];
    isa_program *p = isa_assemble(text, "disassembly.s", err, sizeof err);
    if (!p) {
        fprintf(stderr, "disassembly:\n%s\n", text);
        fz_fail("the disassembly of a program does not assemble", err);
    }
    char *again = isa_disassemble(p), *want = without_kernel_notes(text);
    isa_program_free(p);
    if (!again || strcmp(want, again)) {
        fprintf(stderr, "disassembly:\n%s\nreassembled and disassembled:\n%s\n", text, again ? again : "(null)");
        fz_fail("the disassembly of a program reassembles to a different program", "texts differ");
    }
    free(want);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    isa_program *p = isa_elf_read(fz_file("input.elf", data, size), err, sizeof err);
    if (!p)
        return 0;
    char *text = isa_disassemble(p);
    isa_program_free(p);
    if (!text)
        fz_fail("isa_disassemble", "returned NULL");
    check_reassembles(text);
    free(text);
    return 0;
}
