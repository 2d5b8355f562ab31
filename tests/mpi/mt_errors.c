/*
 * mt_errors.c - MPI_THREAD_MULTIPLE: errors of blocking calls made by several threads at once go
 * through the communicator's error handler as usual: MPI_ERRORS_RETURN returns MPI_ERR_TRUNCATE
 * from a truncated MPI_Recv, MPI_Sendrecv or MPI_Wait; a user handler is called once per error,
 * on the calling thread, and may itself call MPI (MPI_Comm_get_name, MPI_Error_class) from inside
 * the handler. Each thread uses its own duplicates of MPI_COMM_WORLD and exchanges with the
 * partner rank. (MPI_Wait is only used under MPI_ERRORS_RETURN, set on MPI_COMM_WORLD too: Reflex
 * raises request errors on MPI_COMM_WORLD's handler, not the request's communicator's.)
 */
#include "mtest_threads.h"

#define THREADS 3
#define ROUNDS 30

static int partner;
static MPI_Comm ret_comm[THREADS], user_comm[THREADS];
static int handler_calls[THREADS];
static __thread int my_index = -1;

static void handler(MPI_Comm *comm, int *code, ...)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0, cls = -1, t = my_index;
    MPI_Comm_get_name(*comm, name, &len);
    MPI_Error_class(*code, &cls);
    TCHECK_EQ(cls, MPI_ERR_TRUNCATE);
    TCHECK(t >= 0 && t < THREADS, "handler called on a thread without an index");
    if (t >= 0 && t < THREADS) {
        char want[MPI_MAX_OBJECT_NAME];
        snprintf(want, sizeof want, "user %d", t);
        TCHECK(strcmp(name, want) == 0, "handler got communicator '%s', want '%s'", name, want);
        handler_calls[t]++;
    }
}

enum form { RECV, SENDRECV, WAIT };

/* Sends 2 ints to the partner and receives into room for 1 (truncated), in form `form`. */
static int truncated_exchange(MPI_Comm comm, enum form form)
{
    int out[2] = {1, 2}, in[2] = {0, 0}, rc;
    MPI_Request sreq, rreq;
    if (form == SENDRECV) {
        rc = MPI_Sendrecv(out, 2, MPI_INT, partner, 0, in, 1, MPI_INT, partner, 0, comm,
                          MPI_STATUS_IGNORE);
        TCHECK_EQ(in[1], 0);
        return rc;
    }
    MPI_Isend(out, 2, MPI_INT, partner, 0, comm, &sreq);
    if (form == RECV) {
        rc = MPI_Recv(in, 1, MPI_INT, partner, 0, comm, MPI_STATUS_IGNORE);
    } else {
        MPI_Irecv(in, 1, MPI_INT, partner, 0, comm, &rreq);
        rc = MPI_Wait(&rreq, MPI_STATUS_IGNORE);
    }
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    TCHECK_EQ(in[1], 0);
    return rc;
}

static void *worker(void *arg)
{
    int t = MTEST_THREAD_INDEX(arg);
    my_index = t;
    for (int r = 0; r < ROUNDS; r++) {
        int rc = truncated_exchange(ret_comm[t], (enum form)(r % 3)), cls = -1;
        MPI_Error_class(rc, &cls);
        TCHECK_EQ(cls, MPI_ERR_TRUNCATE);
        rc = truncated_exchange(user_comm[t], r % 2 ? RECV : SENDRECV);
        MPI_Error_class(rc, &cls);
        TCHECK_EQ(cls, MPI_ERR_TRUNCATE);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (MTest_Init_multiple(&argc, &argv)) {
        MPI_Errhandler eh;
        partner = mtest_partner();
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_create_errhandler(handler, &eh);
        for (int t = 0; t < THREADS; t++) {
            char name[32];
            MPI_Comm_dup(MPI_COMM_WORLD, &ret_comm[t]);
            MPI_Comm_set_errhandler(ret_comm[t], MPI_ERRORS_RETURN);
            MPI_Comm_dup(MPI_COMM_WORLD, &user_comm[t]);
            MPI_Comm_set_errhandler(user_comm[t], eh);
            snprintf(name, sizeof name, "user %d", t);
            MPI_Comm_set_name(user_comm[t], name);
        }
        mtest_threads(THREADS, worker);
        for (int t = 0; t < THREADS; t++) {
            CHECK_EQ(handler_calls[t], ROUNDS);
            MPI_Comm_free(&ret_comm[t]);
            MPI_Comm_free(&user_comm[t]);
        }
        MPI_Errhandler_free(&eh);
    }
    return MTest_Finalize();
}
