/*
 * mt_windows.c - MPI_THREAD_MULTIPLE: THREADS threads each make, use and free windows over their
 * own duplicate of MPI_COMM_WORLD, at the same time and in whatever order the threads of each
 * process run. Every round makes a window of one flavor (MPI_Win_create, MPI_Win_allocate,
 * MPI_Win_allocate_shared when all ranks share a node, MPI_Win_create_dynamic + attach) and
 * synchronises it in one mode: general active target (post to the left neighbour, start on the
 * right one, Put (thread, round), complete, wait), an exclusive lock on the right neighbour,
 * or MPI_Win_lock_all; the value from the left must then be this thread's, so two threads'
 * windows sharing a context would show. A call that waited for the other processes while
 * holding the library lock (the constructors' exchanges, MPI_Win_free's barrier, MPI_Win_start
 * waiting for a post, MPI_Win_wait for a complete, MPI_Win_lock for a lock another thread
 * holds) would keep out the threads of its process that those processes wait for.
 */
#include "mtest_threads.h"

#define THREADS 4
#define ROUNDS 40

static MPI_Comm comms[THREADS];
static int all_shared; /* every rank on one node: MPI_Win_allocate_shared works */

/* A window of the flavor `round` selects, holding one int per rank; its cell in *cell. */
static MPI_Win make(MPI_Comm comm, int round, int **cell, int *own)
{
    MPI_Win win;
    int flavor = round % 4;
    if (flavor == 2 && !all_shared)
        flavor = 1;
    switch (flavor) {
    case 0:
        MPI_Win_create(own, sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &win);
        *cell = own;
        break;
    case 1:
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, comm, cell, &win);
        break;
    case 2:
        MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, comm, cell, &win);
        break;
    default:
        MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &win);
        MPI_Win_attach(win, own, sizeof(int));
        *cell = own;
        break;
    }
    return win;
}

/* Where a Put to `rank`'s cell goes: 0 in an ordinary window, the cell's address (gathered over
 * the window's communicator) in a dynamic one. */
static MPI_Aint target_disp(MPI_Win win, MPI_Comm comm, int *cell, int rank)
{
    int *flavor, found, size;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &found);
    if (!found || *flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return 0;
    MPI_Comm_size(comm, &size);
    MPI_Aint mine, all[64];
    MPI_Get_address(cell, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, comm);
    return all[rank];
}

/* One epoch on `win` in the mode `round` selects: Put `value` into the right neighbour's cell. */
static void put_right(MPI_Win win, MPI_Comm comm, int round, int value, MPI_Aint disp)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Group world, left_g, right_g;
    switch ((round / 4) % 3) {
    case 0:
        MPI_Comm_group(comm, &world);
        MPI_Group_incl(world, 1, &left, &left_g);
        MPI_Group_incl(world, 1, &right, &right_g);
        MPI_Win_post(left_g, 0, win);
        MPI_Win_start(right_g, 0, win);
        MPI_Put(&value, 1, MPI_INT, right, disp, 1, MPI_INT, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        MPI_Group_free(&left_g);
        MPI_Group_free(&right_g);
        MPI_Group_free(&world);
        break;
    case 1:
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
        MPI_Put(&value, 1, MPI_INT, right, disp, 1, MPI_INT, win);
        MPI_Win_unlock(right, win);
        break;
    default:
        MPI_Win_lock_all(0, win);
        MPI_Put(&value, 1, MPI_INT, right, disp, 1, MPI_INT, win);
        MPI_Win_unlock_all(win);
        break;
    }
}

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    MPI_Comm comm = comms[t];
    int size;
    MPI_Comm_size(comm, &size);
    int left = (mtest_rank + size - 1) % size;
    for (int round = 0; round < ROUNDS; round++) {
        int own = -1, *cell;
        MPI_Win win = make(comm, round, &cell, &own);
        MPI_Win_lock(MPI_LOCK_SHARED, mtest_rank, 0, win);
        *cell = -1;
        MPI_Win_unlock(mtest_rank, win);
        MPI_Aint disp = target_disp(win, comm, cell, (mtest_rank + 1) % size);
        MPI_Barrier(comm); /* every cell reset before anyone puts */
        put_right(win, comm, round, t * 100000 + round * 100 + mtest_rank, disp);
        MPI_Barrier(comm); /* every Put complete at its target */
        MPI_Win_lock(MPI_LOCK_SHARED, mtest_rank, 0, win);
        TCHECK_EQ(*cell, t * 100000 + round * 100 + left);
        MPI_Win_unlock(mtest_rank, win);
        if (round % 4 == 3)
            MPI_Win_detach(win, &own);
        MPI_Win_free(&win);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        MPI_Comm node;
        int node_size;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &node_size);
        MPI_Allreduce(MPI_IN_PLACE, &node_size, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        all_shared = node_size == mtest_size;
        MPI_Comm_free(&node);
        mtest_threads_on_dups(THREADS, worker, comms, THREADS);
    }
    return MTest_Finalize();
}
