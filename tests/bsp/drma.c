/* drma.c -- bsp_put / bsp_get / bsp_hpput / bsp_hpget semantics:
 * a put copies its source at the call; a get reads the value the source has at the sync, before
 * the puts of the superstep land; hp transfers are complete after the sync; offsets; self. */
#include <stdio.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    int p = bsp_nprocs(), me = bsp_pid();
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    int x[4] = {0, 0, 0, 0}, y = 10 * me, z = -1;
    bsp_push_reg(x, sizeof x);
    bsp_push_reg(&y, sizeof y);
    bsp_push_reg(&z, sizeof z);
    bsp_sync();

    /* Buffered put: the source may change right after the call. */
    int v = me;
    bsp_put(next, &v, x, 2 * sizeof(int), sizeof v);
    v = -7;
    /* Buffered get: sees y at the sync (after its owner changes it below), before the puts of
     * this superstep (the put of 999 into y). */
    int r = -1;
    bsp_get(next, &y, 0, &r, sizeof r);
    int big = 999;
    bsp_put(prev, &big, &y, 0, sizeof big);
    y = 10 * me + 1;
    CHECK(r == -1); /* nothing before the sync */
    bsp_sync();
    CHECK(x[2] == prev && x[0] == 0 && x[3] == 0);
    CHECK(r == 10 * next + 1);
    CHECK(y == 999);

    /* Unbuffered transfers complete at the sync. */
    int w = 100 + me, q = -1;
    bsp_hpput(next, &w, &z, 0, sizeof w);
    bsp_sync();
    CHECK(z == 100 + prev);
    bsp_hpget(prev, &z, 0, &q, sizeof q);
    bsp_sync();
    CHECK(q == 100 + (prev + p - 1) % p);

    /* Transfers to oneself. */
    int self = 42 + me, got = 0;
    bsp_put(me, &self, x, 0, sizeof self);
    bsp_sync();
    bsp_get(me, x, 0, &got, sizeof got);
    bsp_sync();
    CHECK(x[0] == 42 + me && got == 42 + me);

    /* Many one-word puts to consecutive words (merged into runs) and a zero-byte put. */
    int words[4] = {1 + me, 2 + me, 3 + me, 4 + me};
    for (int i = 0; i < 4; i++)
        bsp_put(next, &words[i], x, i * (int)sizeof(int), sizeof(int));
    bsp_put(next, NULL, x, 0, 0);
    bsp_sync();
    for (int i = 0; i < 4; i++)
        CHECK(x[i] == i + 1 + prev);

    bsp_pop_reg(&z);
    bsp_pop_reg(&y);
    bsp_pop_reg(x);
    bsp_sync();
    PASS();
    bsp_end();
    return 0;
}
