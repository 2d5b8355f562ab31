/* check.h -- a CHECK macro for the BSPlib tests: a failed check stops the job via bsp_abort. */
#ifndef BSP_TEST_CHECK_H
#define BSP_TEST_CHECK_H
#include <bsp.h>

#define CHECK(cond)                                                       \
    do {                                                                  \
        if (!(cond))                                                      \
            bsp_abort("pid %d: check failed: %s\n", bsp_pid(), #cond);    \
    } while (0)

/* Rank 0 prints this when every check passed. */
#define PASS()                          \
    do {                                \
        if (bsp_pid() == 0)             \
            printf("No Errors\n");      \
    } while (0)
#endif
