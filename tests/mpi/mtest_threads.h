/*
 * mtest_threads.h - helpers for the MPI_THREAD_MULTIPLE tests (mt_*.c), on top of mtest.h.
 *
 * MTest_Init_multiple asks for MPI_THREAD_MULTIPLE and checks what Init_thread, Query_thread and
 * Is_thread_main report; TCHECK/TCHECK_EQ/TCHECK_DATA are the checks of mtest.h made safe to use
 * from several threads (mtest.h's error counter is a plain int); mtest_threads runs a function on
 * N threads and joins them.
 */
#ifndef MTEST_THREADS_H
#define MTEST_THREADS_H

#include "mtest.h"
#include <pthread.h>

static pthread_mutex_t mtest_report_lock = PTHREAD_MUTEX_INITIALIZER;

#define TCHECK(cond, ...) \
    do { if (!(cond)) { pthread_mutex_lock(&mtest_report_lock); \
                        mtest_report(__FILE__, __LINE__, #cond, __VA_ARGS__); \
                        pthread_mutex_unlock(&mtest_report_lock); } } while (0)

#define TCHECK_EQ(a, b) \
    do { long long a_ = (long long)(a), b_ = (long long)(b); \
         TCHECK(a_ == b_, "%s == %s: %lld != %lld", #a, #b, a_, b_); } while (0)

#define TCHECK_DATA(buf, n, sender, seed, what) \
    do { long long bad_ = mtest_verify((buf), (n), (sender), (seed)); \
         TCHECK(bad_ < 0, "data of %s: %zu bytes from %d (seed %d): first wrong byte at %lld", \
                what, (size_t)(n), (int)(sender), (int)(seed), bad_); } while (0)

/* MPI_Init_thread(MPI_THREAD_MULTIPLE); 1 when granted (0 after counting an error). */
static inline int MTest_Init_multiple(int *argc, char ***argv)
{
    int provided = -1, queried = -1, is_main = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mtest_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mtest_size);
    MPI_Query_thread(&queried);
    MPI_Is_thread_main(&is_main);
    CHECK_EQ(queried, provided);
    CHECK_EQ(is_main, 1);
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "[%d] MPI_THREAD_MULTIPLE not provided (got %d)\n", mtest_rank, provided);
        mtest_errs++;
        return 0;
    }
    return 1;
}

/* Runs fn(index) on n threads (index 0..n-1 as a void *) and joins them all. */
static inline void mtest_threads(int n, void *(*fn)(void *))
{
    pthread_t tid[64];
    if (n > 64) {
        fprintf(stderr, "mtest_threads: at most 64 threads\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&tid[i], NULL, fn, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "[%d] pthread_create failed\n", mtest_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
}

/* mtest_threads(n, fn) with a duplicate of MPI_COMM_WORLD in comms[0..ncomms), made before the
 * threads start and freed after they all ended (each thread's communicator of its own). */
static inline void mtest_threads_on_dups(int n, void *(*fn)(void *), MPI_Comm *comms, int ncomms)
{
    for (int t = 0; t < ncomms; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    mtest_threads(n, fn);
    for (int t = 0; t < ncomms; t++)
        MPI_Comm_free(&comms[t]);
}

/* The thread index passed by mtest_threads. */
#define MTEST_THREAD_INDEX(arg) ((int)(intptr_t)(arg))

#endif /* MTEST_THREADS_H */
