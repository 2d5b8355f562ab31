/* dbg_sync.c -- debug mode: processes reach the sync from different source lines. Without the
 * debug mode the program runs (both syncs are equivalent) and nothing is reported. */
#include <stdio.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    if (bsp_pid() == 0)
        bsp_sync(); /* @first */
    else
        bsp_sync(); /* @second */
    PASS();
    bsp_end();
    return 0;
}
