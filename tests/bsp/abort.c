/* abort.c -- bsp_abort formats its message, reports it with its source line and stops every
 * process with a non-zero exit status. */
#include <stdio.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    bsp_sync();
    if (bsp_pid() == bsp_nprocs() - 1)
        bsp_abort("stopping with code %d\n", 42); /* @abort */
    bsp_sync();
    printf("not reached\n");
    bsp_end();
    return 0;
}
