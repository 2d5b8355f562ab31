/* MPI_Comm_join over a loopback TCP socket: between world ranks 0 and 1 of one job, or (run.py
 * pair=N) between rank 0 of each of two jobs, the listening side writing its port number to a
 * file. The other ranks stay out of it. Then the shared intercommunicator checks, on a group of
 * one process on each side. */
#include "mtest_dynproc.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static int listen_loopback(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        FAIL("cannot listen on loopback");
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int connect_loopback(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        FAIL("cannot connect to loopback port %d", port);
        return -1;
    }
    return fd;
}

static void join_and_check(int fd, int high)
{
    MPI_Comm inter = MPI_COMM_NULL;
    if (fd < 0)
        return;
    CALL(MPI_Comm_join(fd, &inter));
    close(fd);
    if (inter == MPI_COMM_NULL)
        return;
    int rsize = 0;
    MPI_Comm_remote_size(inter, &rsize);
    CHECK_EQ(rsize, 1);
    dp_exercise(&inter, high, MPI_COMM_SELF);
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK_CLASS(MPI_Comm_join(-1, &(MPI_Comm){MPI_COMM_NULL}), MPI_ERR_ARG);
    int role, port = 0;
    const char *dir = dp_pair(&role);
    if (dir) {
        if (mtest_rank == 0 && role == 0) {
            char text[32];
            int lfd = listen_loopback(&port);
            snprintf(text, sizeof text, "%d", port);
            dp_put_file(dir, "join-port", text);
            int fd = lfd < 0 ? -1 : accept(lfd, NULL, NULL);
            close(lfd);
            join_and_check(fd, 0);
        } else if (mtest_rank == 0) {
            char text[32];
            dp_get_file(dir, "join-port", text, sizeof text);
            join_and_check(connect_loopback(atoi(text)), 1);
        }
    } else if (MTest_NeedRanks(2)) {
        if (mtest_rank == 0) {
            int lfd = listen_loopback(&port);
            MPI_Send(&port, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            int fd = lfd < 0 ? -1 : accept(lfd, NULL, NULL);
            close(lfd);
            join_and_check(fd, 0);
        } else if (mtest_rank == 1) {
            MPI_Recv(&port, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            join_and_check(connect_loopback(port), 1);
        }
    }
    return MTest_Finalize();
}
