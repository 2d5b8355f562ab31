/*
 * pmpi_prof.c - a minimal profiling library (MPI-3.1 chapter 14, the PMPI interface), built by
 * the runner as a shared object (libpmpi_prof.so) and linked ahead of the MPI library for
 * mode=pmpi cases. It defines MPI_Init, MPI_Send, MPI_Recv and MPI_Finalize, counts the calls
 * and forwards each to its PMPI_ twin. pmpi_prof_counts() lets the test program read the counts;
 * MPI_Finalize prints "pmpi_prof: rank R init=I send=S recv=V" so the runner can check too.
 */
#include <mpi.h>
#include <stdio.h>

static int n_init, n_send, n_recv, n_finalize, my_rank = -1;

int MPI_Init(int *argc, char ***argv)
{
    n_init++;
    int rc = PMPI_Init(argc, argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    return rc;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    n_send++;
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    n_recv++;
    return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

int MPI_Finalize(void)
{
    n_finalize++;
    printf("pmpi_prof: rank %d init=%d send=%d recv=%d finalize=%d\n", my_rank, n_init, n_send, n_recv,
           n_finalize);
    fflush(stdout);
    return PMPI_Finalize();
}

void pmpi_prof_counts(int *init, int *send, int *recv)
{
    *init = n_init;
    *send = n_send;
    *recv = n_recv;
}
