/* bsmp.c -- messages: bsp_set_tagsize takes effect at the next sync (and returns the old size),
 * tags travel with their messages, bsp_qsize counts, bsp_get_tag / bsp_move / bsp_hpmove. */
#include <stdio.h>
#include <string.h>
#include "check.h"

int main(void)
{
    bsp_begin(bsp_nprocs());
    int p = bsp_nprocs(), me = bsp_pid();
    int packets = -1, bytes = -1, status = 0;

    /* Superstep 0: tag size 0 still in force; ask for 4 from the next superstep on. */
    int size = sizeof(int);
    bsp_set_tagsize(&size);
    CHECK(size == 0);
    bsp_send((me + 1) % p, NULL, "abc", 3);
    bsp_qsize(&packets, &bytes);
    CHECK(packets == 0 && bytes == 0); /* nothing arrives before the sync */
    bsp_sync();
    bsp_qsize(&packets, &bytes);
    CHECK(packets == 1 && bytes == 3);
    bsp_get_tag(&status, NULL); /* the message was sent with a 0-byte tag */
    CHECK(status == 3);
    char text[8] = {0};
    bsp_move(text, 2); /* at most 2 bytes */
    CHECK(text[0] == 'a' && text[1] == 'b' && text[2] == 0);
    bsp_get_tag(&status, NULL);
    CHECK(status == -1);
    size = sizeof(int);
    bsp_set_tagsize(&size); /* the size in force now is 4 */
    CHECK(size == (int)sizeof(int));

    /* Superstep 1: every process sends pid+1 ints to everyone, tagged with its pid. */
    int data[64];
    for (int i = 0; i < 64; i++)
        data[i] = 1000 * me + i;
    for (int to = 0; to < p; to++)
        bsp_send(to, &me, data, (me + 1) * (int)sizeof(int));
    bsp_sync();
    bsp_qsize(&packets, &bytes);
    CHECK(packets == p && bytes == (int)sizeof(int) * p * (p + 1) / 2);
    int seen = 0;
    for (int k = 0; k < p; k++) {
        int tag = -1, got[64];
        bsp_get_tag(&status, &tag);
        CHECK(tag >= 0 && tag < p && status == (tag + 1) * (int)sizeof(int));
        if (k % 2 == 0) {
            bsp_move(got, sizeof got);
        } else {
            void *tp, *pp;
            CHECK(bsp_hpmove(&tp, &pp) == status);
            memcpy(got, pp, (size_t)status);
            CHECK(*(int *)tp == tag);
        }
        for (int i = 0; i <= tag; i++)
            CHECK(got[i] == 1000 * tag + i);
        seen |= 1 << tag;
    }
    CHECK(seen == (1 << p) - 1);
    void *tp, *pp;
    CHECK(bsp_hpmove(&tp, &pp) == -1);
    bsp_sync();
    bsp_qsize(&packets, &bytes);
    CHECK(packets == 0);
    PASS();
    bsp_end();
    return 0;
}
