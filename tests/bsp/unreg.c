/* unreg.c -- always-on checks: a put to memory pushed in the same superstep is an error (the
 * registration takes effect at the next sync). */
#include <stdio.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    int x[2], v = 1;
    bsp_push_reg(x, sizeof x);
    bsp_put(0, &v, x, 0, sizeof v); /* @put */
    bsp_sync();
    bsp_end();
    return 0;
}
