/*
 * user_errors.c - user-defined error classes, codes and strings (MPI-3.1 section 8.5):
 * MPI_Add_error_class gives a new class that MPI_LASTUSEDCODE covers; MPI_Add_error_code
 * gives codes whose MPI_Error_class is their class (user-defined or predefined), and a class
 * is its own class; MPI_Add_error_string sets the text MPI_Error_string returns;
 * MPI_Comm_call_errhandler hands a user handler exactly the user code; the MPI-1 names
 * MPI_Errhandler_create/set/get work (where the header still declares them);
 * MPI_Get_address orders addresses within an array.
 * Runs with any number of ranks.
 */
#include "mtest.h"

static int calls = 0, got_code = 0;

static void handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    calls++;
    got_code = *code;
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls, code, code2, got, len, flag;
    char text[MPI_MAX_ERROR_STRING];

    CALL(MPI_Add_error_class(&cls));
    CALL(MPI_Add_error_code(cls, &code));
    CALL(MPI_Add_error_code(MPI_ERR_ARG, &code2));
    CHECK(cls != code && code != code2, "class and codes are not distinct");
    CALL(MPI_Error_class(code, &got));
    CHECK_EQ(got, cls);
    CALL(MPI_Error_class(cls, &got));
    CHECK_EQ(got, cls);
    CALL(MPI_Error_class(code2, &got));
    CHECK_EQ(got, MPI_ERR_ARG);

    CALL(MPI_Add_error_string(cls, "my class"));
    CALL(MPI_Add_error_string(code, "my code"));
    CALL(MPI_Error_string(code, text, &len));
    CHECK(!strcmp(text, "my code") && len == 7, "string of code: \"%s\" (%d)", text, len);
    CALL(MPI_Error_string(cls, text, &len));
    CHECK(!strcmp(text, "my class"), "string of class: \"%s\"", text);

    /* MPI_LASTUSEDCODE covers the new class (Reflex's also covers the codes; MPICH's not). */
    int *last = NULL;
    CALL(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && last && *last >= cls, "MPI_LASTUSEDCODE %d below class %d", last ? *last : -1, cls);

    /* The handler gets exactly the user code (MPI-1 names for create/set/get). */
    MPI_Errhandler eh, cur;
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
#ifndef OPEN_MPI /* Open MPI's header removes the MPI-1 names (MPI-3.0 removed them) */
    CALL(MPI_Errhandler_create(handler, &eh));
    CALL(MPI_Errhandler_set(c, eh));
    CALL(MPI_Errhandler_get(c, &cur));
#else
    CALL(MPI_Comm_create_errhandler(handler, &eh));
    CALL(MPI_Comm_set_errhandler(c, eh));
    CALL(MPI_Comm_get_errhandler(c, &cur));
#endif
    CHECK(cur == eh, "MPI_Errhandler_get did not return the handler");
    MPI_Errhandler_free(&cur);
    CALL(MPI_Comm_call_errhandler(c, code));
    CHECK_EQ(calls, 1);
    CHECK_EQ(got_code, code);
    MPI_Comm_free(&c);
    MPI_Errhandler_free(&eh);

    /* Addresses. */
    double a[4];
    MPI_Aint p0, p3;
    CALL(MPI_Get_address(&a[0], &p0));
    CALL(MPI_Get_address(&a[3], &p3));
    CHECK_EQ(MPI_Aint_diff(p3, p0), 3 * (MPI_Aint)sizeof(double));
    return MTest_Finalize();
}
