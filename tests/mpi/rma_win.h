/*
 * rma_win.h - one window of the flavor named by MTEST_RMA_FLAVOR, for the rma_*.c programs that
 * test synchronisation and operations independently of how the window was made.
 *
 *   MTEST_RMA_FLAVOR=allocate (default)  MPI_Win_allocate
 *   MTEST_RMA_FLAVOR=create              MPI_Win_create on malloc'd memory
 *   MTEST_RMA_FLAVOR=shared              MPI_Win_allocate_shared (all ranks on one node)
 *   MTEST_RMA_FLAVOR=dynamic             MPI_Win_create_dynamic + MPI_Win_attach of malloc'd
 *                                        memory; addresses exchanged with MPI_Allgather
 *
 * Programs address targets through rma_disp(), which is the displacement itself for the static
 * flavors and the target's attached address plus disp * unit for a dynamic window (whose
 * displacement unit is 1 byte). Memory starts zeroed and public (rma_win_make ends with a
 * barrier); rma_own_begin/rma_own_end bracket direct loads and stores of a rank's own window
 * memory outside other epochs (a shared lock on itself plus MPI_Win_sync, MPI-3.1 11.7).
 * The runner does not track this header: after editing it, remove build/tests/.
 */
#ifndef RMA_WIN_H
#define RMA_WIN_H

#include "mtest.h"

typedef struct {
    MPI_Win win;
    MPI_Comm comm;
    void *base;     /* this rank's window memory */
    MPI_Aint size;  /* its size in bytes */
    int unit;       /* displacement unit the program asked for */
    int dynamic;    /* 1: displacements are addresses from addr[] */
    MPI_Aint *addr; /* dynamic: every rank's attached address */
    void *own;      /* memory to free(): create and dynamic flavors */
} RmaWin;

static inline const char *rma_flavor(void)
{
    const char *f = getenv("MTEST_RMA_FLAVOR");
    return f && *f ? f : "allocate";
}

/* Direct access to this rank's own window memory, with no other epoch open on the window. */
static inline void rma_own_begin(RmaWin *w)
{
    int me;
    MPI_Comm_rank(w->comm, &me);
    MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win);
    MPI_Win_sync(w->win);
}

static inline void rma_own_end(RmaWin *w)
{
    int me;
    MPI_Comm_rank(w->comm, &me);
    MPI_Win_sync(w->win);
    MPI_Win_unlock(me, w->win);
}

/* Collective over comm: a window of exactly `size` zeroed bytes on this rank (size may differ
 * between ranks and be 0) with displacement unit `unit`. */
static inline void rma_win_make_exact(RmaWin *w, MPI_Aint size, int unit, MPI_Comm comm)
{
    const char *f = rma_flavor();
    int p, rc;
    memset(w, 0, sizeof *w);
    w->comm = comm;
    w->size = size;
    w->unit = unit;
    MPI_Comm_size(comm, &p);
    if (!strcmp(f, "create")) {
        w->own = w->base = mtest_malloc(size);
        rc = MPI_Win_create(w->base, size, unit, MPI_INFO_NULL, comm, &w->win);
    } else if (!strcmp(f, "shared")) {
        rc = MPI_Win_allocate_shared(size, unit, MPI_INFO_NULL, comm, &w->base, &w->win);
    } else if (!strcmp(f, "dynamic")) {
        w->own = w->base = mtest_malloc(size);
        w->dynamic = 1;
        w->addr = mtest_malloc(p * sizeof(MPI_Aint));
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &w->win);
        if (rc == MPI_SUCCESS && size > 0)
            rc = MPI_Win_attach(w->win, w->base, size);
        MPI_Aint mine;
        MPI_Get_address(w->base, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, w->addr, 1, MPI_AINT, comm);
    } else if (!strcmp(f, "allocate")) {
        rc = MPI_Win_allocate(size, unit, MPI_INFO_NULL, comm, &w->base, &w->win);
    } else {
        fprintf(stderr, "unknown MTEST_RMA_FLAVOR '%s' (want allocate, create, shared, dynamic)\n", f);
        MPI_Abort(MPI_COMM_WORLD, 2);
        return;
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "[%d] window of flavor %s: %s\n", mtest_rank, f, mtest_errstr(rc));
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    rma_own_begin(w);
    if (size > 0)
        memset(w->base, 0, size);
    rma_own_end(w);
    MPI_Barrier(comm);
}

/* rma_win_make_exact with the size rounded up to a multiple of 64 bytes. Odd sizes are the
 * concept of rma_alloc_sizes (MPICH 4.0.2 misplaces data in MPI_Win_allocate windows whose size
 * is not a multiple of 16 bytes); the other programs test something else. */
static inline void rma_win_make(RmaWin *w, MPI_Aint size, int unit, MPI_Comm comm)
{
    rma_win_make_exact(w, (size + 63) / 64 * 64, unit, comm);
}

/* The target displacement of element `disp` (in units) of rank `target`'s window. */
static inline MPI_Aint rma_disp(const RmaWin *w, int target, MPI_Aint disp)
{
    if (!w->dynamic || target == MPI_PROC_NULL)
        return disp;
    return w->addr[target] + disp * w->unit;
}

static inline void rma_win_free(RmaWin *w)
{
    if (w->dynamic && w->size > 0)
        MPI_Win_detach(w->win, w->base);
    CALL(MPI_Win_free(&w->win));
    free(w->own);
    free(w->addr);
    w->own = w->addr = NULL;
}

#endif /* RMA_WIN_H */
