/* subset.c -- bsp_begin(2) on more MPI processes: the run has min(2, available) processes; the
 * others take no part and exit cleanly. */
#include <stdio.h>
#include "check.h"

int main(void)
{
    int avail = bsp_nprocs();
    bsp_begin(2);
    int p = bsp_nprocs();
    CHECK(p == (avail < 2 ? avail : 2));
    int x = -1, me = bsp_pid();
    bsp_push_reg(&x, sizeof x);
    bsp_sync();
    bsp_put((me + 1) % p, &me, &x, 0, sizeof me);
    bsp_sync();
    CHECK(x == (me + p - 1) % p);
    PASS();
    bsp_end();
    return 0;
}
