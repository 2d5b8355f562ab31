/* Ports and names within one job: wrong port names give MPI_ERR_PORT (malformed, closed, wrong
 * nonce), a bounded accept with nobody connecting gives MPI_ERR_OTHER, the name service
 * (publish, lookup, unpublish; MPI_ERR_NAME, MPI_ERR_SERVICE); then, with 2+ ranks, the two
 * halves of MPI_COMM_WORLD accept/connect through a published port and run the shared checks. */
#include "mtest_dynproc.h"

static void bad_ports(void)
{
    char port[MPI_MAX_PORT_NAME], stale[MPI_MAX_PORT_NAME], wrong[MPI_MAX_PORT_NAME];
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Info quick;
    MPI_Info_create(&quick);
    MPI_Info_set(quick, "timeout", "0.3");
    CHECK_CLASS(MPI_Comm_connect("not a port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &c), MPI_ERR_PORT);
    CHECK_CLASS(MPI_Comm_connect("reflex-port:tcp://127.0.0.1:1:zz", MPI_INFO_NULL, 0, MPI_COMM_SELF, &c),
                MPI_ERR_PORT);
    CALL(MPI_Open_port(MPI_INFO_NULL, port));
    CHECK(strncmp(port, "reflex-port:", 12) == 0, "port name %s", port);
    /* The right address with another nonce: the acceptor would refuse it; nobody accepts here. */
    strcpy(wrong, port);
    char *nonce = strrchr(wrong, ':') + 1;
    nonce[0] = nonce[0] == '0' ? '1' : '0';
    CHECK_CLASS(MPI_Comm_connect(wrong, quick, 0, MPI_COMM_SELF, &c), MPI_ERR_PORT);
    CHECK_CLASS(MPI_Comm_accept(port, quick, 0, MPI_COMM_SELF, &c), MPI_ERR_OTHER);
    CHECK_CLASS(MPI_Comm_accept("reflex-port:tcp://127.0.0.1:9:0123456789abcdef", quick, 0,
                                MPI_COMM_SELF, &c), MPI_ERR_PORT);
    strcpy(stale, port);
    CALL(MPI_Close_port(port));
    CHECK_CLASS(MPI_Close_port(stale), MPI_ERR_PORT);
    CHECK_CLASS(MPI_Comm_connect(stale, quick, 0, MPI_COMM_SELF, &c), MPI_ERR_PORT);
    CHECK(c == MPI_COMM_NULL, "a failed connect set the communicator");
    MPI_Info_set(quick, "timeout", "soon");
    CALL(MPI_Open_port(MPI_INFO_NULL, port));
    CHECK_CLASS(MPI_Comm_accept(port, quick, 0, MPI_COMM_SELF, &c), MPI_ERR_INFO);
    CALL(MPI_Close_port(port));
    MPI_Info_free(&quick);
}

static void names(void)
{
    char service[64], port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME];
    snprintf(service, sizeof service, "dynproc-port-test-%d", mtest_rank);
    CALL(MPI_Open_port(MPI_INFO_NULL, port));
    CHECK_CLASS(MPI_Lookup_name(service, MPI_INFO_NULL, found), MPI_ERR_NAME);
    CALL(MPI_Publish_name(service, MPI_INFO_NULL, port));
    CALL(MPI_Lookup_name(service, MPI_INFO_NULL, found));
    CHECK(strcmp(found, port) == 0, "looked up %s, published %s", found, port);
    CALL(MPI_Unpublish_name(service, MPI_INFO_NULL, port));
    CHECK_CLASS(MPI_Lookup_name(service, MPI_INFO_NULL, found), MPI_ERR_NAME);
    CHECK_CLASS(MPI_Unpublish_name(service, MPI_INFO_NULL, port), MPI_ERR_SERVICE);
    CALL(MPI_Close_port(port));
}

/* A bad argument at the root of a larger group is every process's error: nobody waits for it. */
static void bad_root_arguments(void)
{
    char longname[400];
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Info bad;
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_CLASS(MPI_Comm_connect(mtest_rank == 0 ? longname : NULL, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c),
                MPI_ERR_PORT);
    MPI_Info_create(&bad);
    MPI_Info_set(bad, "timeout", "-1");
    CHECK_CLASS(MPI_Comm_accept("reflex-port:tcp://127.0.0.1:9:0123456789abcdef", bad, mtest_size - 1,
                                MPI_COMM_WORLD, &c), MPI_ERR_INFO);
    MPI_Info_free(&bad);
    CHECK(c == MPI_COMM_NULL, "a failed accept/connect set the communicator");
}

/* Even world ranks accept, odd ones connect; the port travels through the name service. */
static void halves(void)
{
    int side = mtest_rank % 2;
    MPI_Comm half, inter = MPI_COMM_NULL;
    char port[MPI_MAX_PORT_NAME] = "";
    CALL(MPI_Comm_split(MPI_COMM_WORLD, side, mtest_rank, &half));
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    if (mtest_rank == 0) {
        CALL(MPI_Open_port(MPI_INFO_NULL, port));
        CALL(MPI_Publish_name("dynproc-halves", MPI_INFO_NULL, port));
    }
    CALL(MPI_Barrier(MPI_COMM_WORLD));
    if (side == 0) {
        CALL(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &inter));
    } else {
        if (mtest_rank == 1)
            CALL(MPI_Lookup_name("dynproc-halves", MPI_INFO_NULL, port));
        CALL(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &inter));
    }
    if (inter != MPI_COMM_NULL)
        dp_exercise(&inter, side, half);
    CALL(MPI_Barrier(MPI_COMM_WORLD));
    if (mtest_rank == 0) {
        CALL(MPI_Unpublish_name("dynproc-halves", MPI_INFO_NULL, port));
        CALL(MPI_Close_port(port));
    }
    CALL(MPI_Comm_free(&half));
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    bad_ports();
    names();
    bad_root_arguments();
    if (mtest_size >= 2)
        halves();
    return MTest_Finalize();
}
