/* dbg_reg.c -- a registration missing on all pids but 0. The debug mode names the line; without
 * it the count mismatch is still caught (it would corrupt the registration table), without
 * lines. */
#include <stdio.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    int a = 0, b = 0;
    bsp_push_reg(&a, sizeof a); /* @both */
    if (bsp_pid() == 0)
        bsp_push_reg(&b, sizeof b); /* @only0 */
    bsp_sync(); /* @sync */
    PASS();
    bsp_end();
    return 0;
}
