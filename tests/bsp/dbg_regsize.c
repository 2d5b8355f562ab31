/* dbg_regsize.c -- registrations of different sizes are legal BSPlib (the debug mode warns and
 * carries on); registrations popped in a different order are an error in any mode. */
#include <stdio.h>
#include "check.h"

int main(int argc, char **argv)
{
    bsp_begin(bsp_nprocs());
    int me = bsp_pid(), a[4], b[4];
    bsp_push_reg(a, me == 0 ? (int)sizeof a : 2 * (int)sizeof(int)); /* @size */
    bsp_push_reg(b, sizeof b);
    bsp_sync();
    if (argc > 1 && me == 0) { /* "swap": pop in another order on pid 0 */
        bsp_pop_reg(a); /* @popa */
        bsp_pop_reg(b);
    } else {
        bsp_pop_reg(b); /* @popb */
        bsp_pop_reg(a);
    }
    bsp_sync();
    PASS();
    bsp_end();
    return 0;
}
