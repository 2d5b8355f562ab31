/* reg.c -- registrations match by order, not by address or size: different local addresses,
 * NULL with size 0 on all but pid 0, the same address registered twice (the latest wins, pops go
 * latest first), and pushes taking effect at the next sync. */
#include <stdio.h>
#include <stdlib.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    int p = bsp_nprocs(), me = bsp_pid();
    /* Different allocations on each process: local addresses differ. */
    char *pad = malloc(1 + 64 * (size_t)me);
    int *a = malloc(4 * sizeof(int)), *b = malloc(4 * sizeof(int));
    int *gather = me == 0 ? calloc((size_t)p, sizeof(int)) : NULL;
    for (int i = 0; i < 4; i++)
        a[i] = b[i] = -1;
    bsp_push_reg(a, 4 * sizeof(int));
    bsp_push_reg(b, 4 * sizeof(int));
    bsp_push_reg(gather, me == 0 ? p * (int)sizeof(int) : 0);
    bsp_sync();

    int v = me;
    bsp_put((me + 1) % p, &v, b, sizeof(int), sizeof v);
    bsp_put(0, &v, gather, me * (int)sizeof(int), sizeof v);
    bsp_sync();
    CHECK(b[1] == (me + p - 1) % p && a[1] == -1);
    if (me == 0)
        for (int i = 0; i < p; i++)
            CHECK(gather[i] == i);

    /* a registered a second time with 8 bytes: the latest registration is used... */
    bsp_push_reg(a, 2 * sizeof(int));
    bsp_sync();
    bsp_put((me + 1) % p, &v, a, sizeof(int), sizeof v);
    bsp_pop_reg(a); /* ...until the sync after its pop: the put above still uses it */
    bsp_sync();
    CHECK(a[1] == (me + p - 1) % p);
    /* Now the 16-byte registration is the one in force. */
    int w = 100 + me;
    bsp_put((me + 1) % p, &w, a, 3 * sizeof(int), sizeof w);
    bsp_sync();
    CHECK(a[3] == 100 + (me + p - 1) % p);
    bsp_pop_reg(a);
    bsp_pop_reg(b);
    bsp_pop_reg(gather);
    bsp_sync();
    PASS();
    bsp_end();
    free(pad);
    return 0;
}
