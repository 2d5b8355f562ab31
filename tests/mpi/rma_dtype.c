/*
 * rma_dtype.c - derived datatypes on the origin and the target side of MPI_Put, MPI_Get,
 * MPI_Accumulate (SUM) and MPI_Get_accumulate (SUM) (MPI-3.1 11.3: the target datatype is
 * interpreted in the target's window; 11.3.4: accumulate types built from one predefined type),
 * in fence epochs, on a window of the flavor named by MTEST_RMA_FLAVOR (rma_win.h). Five layouts
 * that each carry 24 ints: contiguous, vector (12 blocks of 2, stride 5), indexed (blocks 3,1,4
 * at 0,5,9; count 3), struct of MPI_INT blocks (2,1,3 at bytes 0,12,28; count 4) and MPI_INT
 * resized to a 12-byte extent (count 24). Every (origin layout, target layout) pair: the target
 * elements are compared with a serial scatter through hand-computed offsets, and everything
 * outside the layout must be untouched. Each rank targets its right neighbour. Runs with any
 * number of ranks.
 */
#include "rma_win.h"

#define NL 5
#define SPAN 80 /* ints covered by the widest layout */
#define NE 24   /* ints carried by each layout */

static MPI_Datatype types[NL];
static int counts[NL] = {NE, 1, 3, 4, NE};
static int offs[NL][NE]; /* int offsets of the NE elements of each layout */
static const char *names[NL] = {"contig", "vector", "indexed", "struct", "resized"};

static void make_types(void)
{
    MPI_Datatype t;
    types[0] = MPI_INT;
    MPI_Type_vector(12, 2, 5, MPI_INT, &types[1]);
    int bl[3] = {3, 1, 4}, dl[3] = {0, 5, 9};
    MPI_Type_indexed(3, bl, dl, MPI_INT, &t);
    MPI_Type_create_resized(t, 0, 13 * sizeof(int), &types[2]); /* extent 13 ints (it is already) */
    MPI_Type_free(&t);
    int sbl[3] = {2, 1, 3};
    MPI_Aint sdl[3] = {0, 12, 28};
    MPI_Datatype st[3] = {MPI_INT, MPI_INT, MPI_INT};
    MPI_Type_create_struct(3, sbl, sdl, st, &types[3]);
    MPI_Type_create_resized(MPI_INT, 0, 12, &types[4]);
    for (int k = 1; k < NL; k++)
        MPI_Type_commit(&types[k]);
    for (int i = 0; i < NE; i++) {
        offs[0][i] = i;
        offs[1][i] = (i / 2) * 5 + i % 2;
        static const int ix[8] = {0, 1, 2, 5, 9, 10, 11, 12}, sx[6] = {0, 1, 3, 7, 8, 9};
        offs[2][i] = (i / 8) * 13 + ix[i % 8];
        offs[3][i] = (i / 6) * 10 + sx[i % 6];
        offs[4][i] = 3 * i;
    }
}

/* one operation (0 Put, 1 Get, 2 Accumulate, 3 Get_accumulate) with layouts ol (origin), tl (target) */
static void one(RmaWin *w, int op, int ol, int tl)
{
    int me = mtest_rank, p = mtest_size, right = (me + 1) % p, left = (me + p - 1) % p;
    int *mem = w->base, org[SPAN], res[SPAN];
    int seed = 1000 * (op + 1) + 10 * ol + tl;
    for (int i = 0; i < SPAN; i++) {
        mem[i] = -(i + 1) - seed;          /* target markers */
        org[i] = 100000 * me + seed + i;   /* origin values at every position */
        res[i] = -7;
    }
    CALL(MPI_Win_fence(0, w->win));
    MPI_Aint d = rma_disp(w, right, 0);
    if (op == 0)
        CALL(MPI_Put(org, counts[ol], types[ol], right, d, counts[tl], types[tl], w->win));
    else if (op == 1)
        CALL(MPI_Get(res, counts[ol], types[ol], right, d, counts[tl], types[tl], w->win));
    else if (op == 2)
        CALL(MPI_Accumulate(org, counts[ol], types[ol], right, d, counts[tl], types[tl], MPI_SUM, w->win));
    else
        CALL(MPI_Get_accumulate(org, counts[ol], types[ol], res, counts[ol], types[ol], right, d, counts[tl],
                                types[tl], MPI_SUM, w->win));
    CALL(MPI_Win_fence(0, w->win));
    /* the target side: my memory, written by my left neighbour */
    int want[SPAN];
    for (int i = 0; i < SPAN; i++)
        want[i] = -(i + 1) - seed;
    if (op != 1)
        for (int e = 0; e < NE; e++) {
            int v = 100000 * left + seed + offs[ol][e];
            want[offs[tl][e]] = op == 0 ? v : want[offs[tl][e]] + v;
        }
    for (int i = 0; i < SPAN; i++)
        if (mem[i] != want[i]) {
            FAIL("op %d origin %s target %s: target int %d is %d, want %d", op, names[ol], names[tl], i, mem[i], want[i]);
            break;
        }
    /* the origin side of Get / Get_accumulate: the right neighbour's old values, in my layout */
    if (op == 1 || op == 3) {
        int got[SPAN];
        for (int i = 0; i < SPAN; i++)
            got[i] = -7;
        for (int e = 0; e < NE; e++)
            got[offs[ol][e]] = -(offs[tl][e] + 1) - seed;
        for (int i = 0; i < SPAN; i++)
            if (res[i] != got[i]) {
                FAIL("op %d origin %s target %s: result int %d is %d, want %d", op, names[ol], names[tl], i, res[i],
                     got[i]);
                break;
            }
    }
}

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    make_types();
    RmaWin w;
    rma_win_make(&w, SPAN * sizeof(int), sizeof(int), MPI_COMM_WORLD);
    CALL(MPI_Win_fence(0, w.win));
    for (int op = 0; op < 4; op++)
        for (int ol = 0; ol < NL; ol++)
            for (int tl = 0; tl < NL; tl++)
                one(&w, op, ol, tl);
    CALL(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    rma_win_free(&w);
    for (int k = 1; k < NL; k++)
        MPI_Type_free(&types[k]);
    return MTest_Finalize();
}
