/* init.c -- bsp_init with the SPMD part in a function: only pid 0 runs the rest of main, and only
 * pid 0 continues after bsp_end. */
#include <stdio.h>
#include "check.h"

static int result;

static void spmd(void)
{
    bsp_begin(bsp_nprocs());
    int me = bsp_pid(), sum = 0;
    bsp_push_reg(&sum, sizeof sum);
    bsp_sync();
    bsp_put(0, &me, &sum, 0, sizeof me); /* overlapping puts: one of them wins */
    bsp_sync();
    if (me == 0)
        result = bsp_nprocs();
    bsp_end();
}

int main(int argc, char **argv)
{
    bsp_init(spmd, argc, argv);
    printf("main before spmd (only pid 0)\n");
    spmd();
    CHECK(result >= 1);
    printf("No Errors\n");
    return 0;
}
