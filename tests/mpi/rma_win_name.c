/*
 * rma_win_name.c - names and info of windows (MPI-3.1 6.8, 11.2.7): MPI_Win_get_name of a window
 * that was never named gives the empty string (length 0), MPI_Win_set_name/MPI_Win_get_name
 * round-trip and rename; MPI_Win_allocate with an info hint (no_locks), MPI_Win_get_info gives a
 * new info object the caller frees, MPI_Win_set_info takes a hint (accumulate_ordering), and the
 * window still works afterwards (fence epoch, Accumulate SUM). Runs with any number of ranks.
 */
#include "mtest.h"

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int *x = NULL, len = -1;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Win win;
    MPI_Info info, got;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true"); /* a hint: the window is used with fences only */
    CALL(MPI_Win_allocate(sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &x, &win));
    *x = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Info_free(&info);

    strcpy(name, "junk");
    CALL(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0 && name[0] == 0, "unnamed window: name '%s' length %d", name, len);
    CALL(MPI_Win_set_name(win, "rma test window"));
    CALL(MPI_Win_get_name(win, name, &len));
    CHECK(!strcmp(name, "rma test window") && len == (int)strlen("rma test window"),
          "name '%s' length %d", name, len);
    CALL(MPI_Win_set_name(win, "second"));
    CALL(MPI_Win_get_name(win, name, &len));
    CHECK(!strcmp(name, "second") && len == 6, "renamed: '%s' length %d", name, len);

    /* Win_get_info returns a new info object the caller frees; set_info takes hints */
    CALL(MPI_Win_get_info(win, &got));
    int nkeys = -1;
    CALL(MPI_Info_get_nkeys(got, &nkeys));
    CHECK(nkeys >= 0, "nkeys %d", nkeys);
    CHECK(got != MPI_INFO_NULL, "Win_get_info gave MPI_INFO_NULL");
    MPI_Info_free(&got);
    MPI_Info_create(&info);
    MPI_Info_set(info, "accumulate_ordering", "none");
    CALL(MPI_Win_set_info(win, info));
    MPI_Info_free(&info);
    CALL(MPI_Win_get_info(win, &got));
    MPI_Info_free(&got);

    /* the window still works: everyone adds its rank + 1 to rank 0's int */
    CALL(MPI_Win_fence(0, win));
    int one = mtest_rank + 1;
    CALL(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
    CALL(MPI_Win_fence(0, win));
    if (mtest_rank == 0)
        CHECK_EQ(*x, mtest_size * (mtest_size + 1) / 2);
    CALL(MPI_Win_free(&win));
    return MTest_Finalize();
}
