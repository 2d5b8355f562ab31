/* dbg_hp.c -- hp transfers whose data changes before the sync: the source of a bsp_hpput
 * modified after the call (argument "put"), or the destination of a bsp_hpget written before
 * the sync (argument "get"). */
#include <stdio.h>
#include <string.h>
#include "check.h"

int main(int argc, char **argv)
{
    bsp_begin(bsp_nprocs());
    int p = bsp_nprocs(), me = bsp_pid();
    int z = 0, w = 10 + me, q = 0;
    bsp_push_reg(&z, sizeof z);
    bsp_sync();
    int bad_put = argc > 1 && strcmp(argv[1], "put") == 0;
    int bad_get = argc > 1 && strcmp(argv[1], "get") == 0;
    bsp_hpput((me + 1) % p, &w, &z, 0, sizeof w); /* @hpput */
    if (bad_put)
        w = 99;
    bsp_sync();
    bsp_hpget((me + 1) % p, &z, 0, &q, sizeof q); /* @hpget */
    if (bad_get)
        q = -5;
    bsp_sync();
    CHECK(bad_put || bad_get || q == 10 + me);
    PASS();
    bsp_end();
    return 0;
}
