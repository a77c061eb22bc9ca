/* be_kind.c: the kernel-kind table: what each kind of kernel (matmul
 * template, row kernel) supplies to the back half's passes. */
#include "backend.h"

static const be_kind kinds[] = {
    [IR_POINTWISE] = {"row kernel", be_rows_plan, be_rows_align, be_rows_access, be_rows_estimate, be_rows_need,
                      be_rows_emit},
    [IR_REDUCTION] = {"row kernel", be_rows_plan, be_rows_align, be_rows_access, be_rows_estimate, be_rows_need,
                      be_rows_emit},
    [IR_MATMUL] = {"matmul template", be_matmul_plan, NULL, be_matmul_access, be_matmul_estimate,
                   be_matmul_need, be_matmul_emit},
};

const be_kind *be_kind_of(const be_ctx *c, int pos)
{
    return &kinds[c->p->kernels[c->p->order[pos]].kind];
}
