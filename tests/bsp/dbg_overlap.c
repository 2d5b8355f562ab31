/* dbg_overlap.c -- every process puts into the same word of pid 0 in one superstep (an
 * overwrite error); a second superstep writes disjoint words and is clean. */
#include <stdio.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    int p = bsp_nprocs(), me = bsp_pid();
    int x[64] = {0};
    bsp_push_reg(x, sizeof x);
    bsp_sync();
    bsp_put(0, &me, x, me * (int)sizeof(int), sizeof me); /* disjoint words: fine */
    bsp_sync();
    CHECK(me != 0 || x[p - 1] == p - 1);
    if (me == 1 % p)
        bsp_put(0, &me, x, sizeof(int), sizeof me); /* @one */
    if (me == 2 % p)
        bsp_put(0, &me, x, 0, 2 * sizeof(int)); /* @two */
    bsp_sync();
    PASS();
    bsp_end();
    return 0;
}
