/* timing.c -- bsp_time starts near 0 at bsp_begin and never decreases, across syncs. */
#include <stdio.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    double last = bsp_time();
    CHECK(last >= 0.0);
    for (int i = 0; i < 200; i++) {
        double t = bsp_time();
        CHECK(t >= last);
        last = t;
        if (i % 20 == 0)
            bsp_sync();
    }
    PASS();
    bsp_end();
    return 0;
}
