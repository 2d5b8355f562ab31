/*
 * layout.c - which node-local shared-memory segment each rank uses, and a ring over all ranks.
 *
 * Reflex names a node's segment reflex-<job>-<node index> and unlinks it once every local rank
 * has mapped it, so the mapping stays visible in /proc/self/maps as "... (deleted)". Each rank
 * prints "layout <rank>:<node index>" ("none" without a segment: alone on its node, or TCP
 * only). With 2 ranks on each of 2 emulated Slurm nodes the expected set is 0:0 1:0 2:1 3:1;
 * then a token goes around the ring, so ranks of different nodes must also talk (over TCP).
 * Prints " No Errors" on rank 0 when the token comes back right.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* The node index of the first mapped /dev/shm/reflex-<job>-<digits> file, or -1. */
static int segment_node(void)
{
    char line[4096];
    int node = -1;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        return -1;
    while (node < 0 && fgets(line, sizeof line, maps)) {
        char *path = strstr(line, "/dev/shm/reflex-");
        if (!path)
            continue;
        path[strcspn(path, " \n")] = '\0';
        char *dash = strrchr(path, '-');
        int index, used = 0;
        if (dash && sscanf(dash + 1, "%d%n", &index, &used) == 1 && dash[1 + used] == '\0')
            node = index;
    }
    fclose(maps);
    return node;
}

int main(int argc, char **argv)
{
    int rank, size, token = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int node = segment_node();
    if (node < 0)
        printf("layout %d:none\n", rank);
    else
        printf("layout %d:%d\n", rank, node);
    fflush(stdout);
    if (size > 1) {
        if (rank == 0) {
            token = 0;
            MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += rank;
            MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
        }
    } else {
        token = 0;
    }
    if (rank == 0 && token == size * (size - 1) / 2)
        printf(" No Errors\n");
    else if (rank == 0)
        printf("token came back as %d, expected %d\n", token, size * (size - 1) / 2);
    MPI_Finalize();
    return 0;
}
