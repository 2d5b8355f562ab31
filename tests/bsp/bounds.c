/* bounds.c -- always-on checks: a put beyond the registered size is an error reported with its
 * source line, whether or not the debug mode is on. */
#include <stdio.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    int x[2], v = 1;
    bsp_push_reg(x, sizeof x);
    bsp_sync();
    bsp_put(0, &v, x, sizeof x, sizeof v); /* @put */
    bsp_sync();
    bsp_end();
    return 0;
}
