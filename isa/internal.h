/* internal.h: helpers shared by the isa module's files; not part of the
 * public interface (isa.h). */
#ifndef ISA_INTERNAL_H
#define ISA_INTERNAL_H

#include <stddef.h>

/* printf into err (if err and len are set). */
void isa_set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
