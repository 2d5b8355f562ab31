/*
 * mpio.h -- Reflex MPI library: the MPI-IO interface.
 *
 * Everything of MPI-IO (MPI_File, the MPI_MODE_* and MPI_SEEK_* constants,
 * the MPI_File_* functions) is declared by mpi.h, as in MPICH; this header
 * exists for programs that include it by name.
 */
#ifndef REFLEX_MPIO_H_INCLUDED
#define REFLEX_MPIO_H_INCLUDED
#include "mpi.h"
#endif
