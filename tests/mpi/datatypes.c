/*
 * datatypes.c - every predefined basic C datatype (MPI-3.1 section 3.2.2, tables 3.2/3.3) sent
 * and received between partners (self when unpaired): MPI_Type_size equals the C sizeof, 33
 * elements arrive with the right values (compared as values, so padding in long double does
 * not matter), and MPI_Get_count reports 33. Covers char, signed/unsigned char, short, int,
 * long, long long, their unsigned forms, float, double, long double, the fixed-width integers,
 * C bool, wchar_t, MPI_BYTE, MPI_PACKED, MPI_AINT, MPI_OFFSET, MPI_COUNT and the C complex types.
 */
#include "mtest.h"
#include <complex.h>
#include <stdbool.h>
#include <wchar.h>

#define N 33

/* Test one type: fill with values derived from (rank, i), exchange, compare with ==. */
#define TYPE_TEST(ctype, mpitype, value_expr)                                                  \
    do {                                                                                       \
        ctype out_[N], in_[N];                                                                 \
        int sz_ = -1, cnt_ = -1;                                                               \
        MPI_Request rq_[2];                                                                    \
        MPI_Status st_;                                                                        \
        MPI_Type_size(mpitype, &sz_);                                                          \
        CHECK(sz_ == (int)sizeof(ctype), "%s: MPI_Type_size %d, sizeof %d", #mpitype, sz_,     \
              (int)sizeof(ctype));                                                             \
        memset(in_, 0, sizeof in_);                                                            \
        for (int i = 0; i < N; i++) {                                                          \
            int r = mtest_rank;                                                                \
            (void)r;                                                                           \
            out_[i] = (ctype)(value_expr);                                                     \
        }                                                                                      \
        MPI_Irecv(in_, N, mpitype, peer, tag, MPI_COMM_WORLD, &rq_[0]);                        \
        MPI_Isend(out_, N, mpitype, peer, tag, MPI_COMM_WORLD, &rq_[1]);                       \
        MPI_Wait(&rq_[0], &st_);                                                               \
        MPI_Wait(&rq_[1], MPI_STATUS_IGNORE);                                                  \
        MPI_Get_count(&st_, mpitype, &cnt_);                                                   \
        CHECK(cnt_ == N, "%s: count %d", #mpitype, cnt_);                                      \
        for (int i = 0; i < N; i++) {                                                          \
            int r = peer;                                                                      \
            (void)r;                                                                           \
            ctype want_ = (ctype)(value_expr);                                                 \
            if (!(in_[i] == want_)) {                                                          \
                CHECK(in_[i] == want_, "%s: element %d wrong", #mpitype, i);                   \
                break;                                                                         \
            }                                                                                  \
        }                                                                                      \
        tag++;                                                                                 \
    } while (0)

int main(int argc, char **argv)
{
    MTest_Init(&argc, &argv);
    int peer = mtest_partner(), tag = 0;

    TYPE_TEST(char, MPI_CHAR, 'a' + (i + r) % 26);
    TYPE_TEST(signed char, MPI_SIGNED_CHAR, -60 + i + r);
    TYPE_TEST(unsigned char, MPI_UNSIGNED_CHAR, 200 + i + r);
    TYPE_TEST(short, MPI_SHORT, -30000 + 1000 * i + r);
    TYPE_TEST(unsigned short, MPI_UNSIGNED_SHORT, 60000 + i + r);
    TYPE_TEST(int, MPI_INT, -2000000000 + 1000 * i + r);
    TYPE_TEST(unsigned, MPI_UNSIGNED, 4000000000u + i + r);
    TYPE_TEST(long, MPI_LONG, -(1L << 40) + i * 12345L + r);
    TYPE_TEST(unsigned long, MPI_UNSIGNED_LONG, (1UL << 63) + i + r);
    TYPE_TEST(long long, MPI_LONG_LONG, -(1LL << 62) + i + r);
    TYPE_TEST(long long, MPI_LONG_LONG_INT, (1LL << 61) - i - r);
    TYPE_TEST(unsigned long long, MPI_UNSIGNED_LONG_LONG, ~0ULL - i - r);
    TYPE_TEST(float, MPI_FLOAT, 1.5f * i - r + 0.25f);
    TYPE_TEST(double, MPI_DOUBLE, 1e300 / (i + 1) + r);
    TYPE_TEST(long double, MPI_LONG_DOUBLE, 1.0L / 3.0L * i + r);
    TYPE_TEST(int8_t, MPI_INT8_T, -128 + i + r);
    TYPE_TEST(int16_t, MPI_INT16_T, -32768 + i + r);
    TYPE_TEST(int32_t, MPI_INT32_T, INT32_MIN + i + r);
    TYPE_TEST(int64_t, MPI_INT64_T, INT64_MIN + i + r);
    TYPE_TEST(uint8_t, MPI_UINT8_T, 255 - i - r);
    TYPE_TEST(uint16_t, MPI_UINT16_T, 65535 - i - r);
    TYPE_TEST(uint32_t, MPI_UINT32_T, UINT32_MAX - i - r);
    TYPE_TEST(uint64_t, MPI_UINT64_T, UINT64_MAX - i - r);
    TYPE_TEST(bool, MPI_C_BOOL, (i + r) % 3 == 0);
    TYPE_TEST(wchar_t, MPI_WCHAR, L'A' + i + r);
    TYPE_TEST(unsigned char, MPI_BYTE, (i * 37 + r) & 0xff);
    TYPE_TEST(unsigned char, MPI_PACKED, (i * 91 + r) & 0xff);
    TYPE_TEST(MPI_Aint, MPI_AINT, (MPI_Aint)-1 - i * 4096 - r);
    TYPE_TEST(MPI_Offset, MPI_OFFSET, ((MPI_Offset)1 << 50) + i + r);
    TYPE_TEST(MPI_Count, MPI_COUNT, ((MPI_Count)1 << 45) - i - r);
    TYPE_TEST(float _Complex, MPI_C_COMPLEX, (float)i + (float)r * I);
    TYPE_TEST(float _Complex, MPI_C_FLOAT_COMPLEX, (float)r - (float)i * I);
    TYPE_TEST(double _Complex, MPI_C_DOUBLE_COMPLEX, 0.5 * i + 1e10 * r * I);
    TYPE_TEST(long double _Complex, MPI_C_LONG_DOUBLE_COMPLEX, 1.0L / 7 * i + (long double)r * I);

    return MTest_Finalize();
}
