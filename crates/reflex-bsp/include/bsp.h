/*
 * bsp.h -- BSPlib (the Oxford BSPlib API) for Reflex, on MPI one-sided communication.
 *
 * Link with -lbsp through an MPI compiler wrapper (mpicc prog.c -lbsp): libbsp.so calls MPI
 * and takes it from the libmpi the program links.
 *
 * Every call below is a macro that passes __FILE__ and __LINE__ to an _at variant, so the debug
 * mode (REFLEX_BSP_DEBUG=1 at run time, no recompilation) reports source lines. The plain
 * functions are exported as well (function pointers, other languages); define
 * BSP_NO_LOCATIONS before including this header to call them directly.
 */
#ifndef REFLEX_BSP_H
#define REFLEX_BSP_H

#include <stdarg.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define BSP_NORETURN_ __attribute__((noreturn))
#define BSP_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define BSP_NORETURN_
#define BSP_PRINTF_(f, a)
#endif

/* The SPMD section. */
void bsp_init(void (*spmd)(void), int argc, char **argv);
void bsp_begin(int maxprocs);
void bsp_end(void);
int bsp_pid(void);
int bsp_nprocs(void);
double bsp_time(void);

/* Supersteps and registration (both take effect at the next bsp_sync). */
void bsp_sync(void);
void bsp_push_reg(const void *ident, int size);
void bsp_pop_reg(const void *ident);

/* Direct remote memory access. */
void bsp_put(int pid, const void *src, void *dst, int offset, int nbytes);
void bsp_get(int pid, const void *src, int offset, void *dst, int nbytes);
void bsp_hpput(int pid, const void *src, void *dst, int offset, int nbytes);
void bsp_hpget(int pid, const void *src, int offset, void *dst, int nbytes);

/* Bulk synchronous message passing. */
void bsp_send(int pid, const void *tag, const void *payload, int nbytes);
void bsp_qsize(int *packets, int *accum_nbytes);
void bsp_get_tag(int *status, void *tag);
void bsp_move(void *payload, int reception_nbytes);
int bsp_hpmove(void **tag_ptr, void **payload_ptr);
void bsp_set_tagsize(int *tag_nbytes);

/* bsp_abort(fmt, ...) is formatted here (see below); the exported bsp_abort symbol prints its
 * argument unformatted. */
BSP_NORETURN_ void bsp_abort_msg_at(const char *msg, const char *file, int line);

/* The _at variants the macros call. */
void bsp_begin_at(int maxprocs, const char *file, int line);
void bsp_end_at(const char *file, int line);
void bsp_sync_at(const char *file, int line);
void bsp_push_reg_at(const void *ident, int size, const char *file, int line);
void bsp_pop_reg_at(const void *ident, const char *file, int line);
void bsp_put_at(int pid, const void *src, void *dst, int offset, int nbytes, const char *file, int line);
void bsp_get_at(int pid, const void *src, int offset, void *dst, int nbytes, const char *file, int line);
void bsp_hpput_at(int pid, const void *src, void *dst, int offset, int nbytes, const char *file, int line);
void bsp_hpget_at(int pid, const void *src, int offset, void *dst, int nbytes, const char *file, int line);
void bsp_send_at(int pid, const void *tag, const void *payload, int nbytes, const char *file, int line);
void bsp_set_tagsize_at(int *tag_nbytes, const char *file, int line);

/* Formats a bsp_abort message in the caller (Rust cannot define C variadic functions on stable,
 * and a C shim's symbols would be hidden by the Rust library's export list). */
static inline BSP_NORETURN_ void bsp_vabort_at_(const char *file, int line, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    bsp_abort_msg_at(msg, file, line);
}

static inline BSP_NORETURN_ BSP_PRINTF_(3, 4) void bsp_abort_at_(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bsp_vabort_at_(file, line, fmt, ap);
}

static inline BSP_NORETURN_ void bsp_vabort(const char *fmt, va_list ap)
{
    bsp_vabort_at_(NULL, 0, fmt, ap);
}

#define bsp_abort(...) bsp_abort_at_(__FILE__, __LINE__, __VA_ARGS__)

#ifndef BSP_NO_LOCATIONS
#define bsp_begin(maxprocs) bsp_begin_at((maxprocs), __FILE__, __LINE__)
#define bsp_end() bsp_end_at(__FILE__, __LINE__)
#define bsp_sync() bsp_sync_at(__FILE__, __LINE__)
#define bsp_push_reg(ident, size) bsp_push_reg_at((ident), (size), __FILE__, __LINE__)
#define bsp_pop_reg(ident) bsp_pop_reg_at((ident), __FILE__, __LINE__)
#define bsp_put(pid, src, dst, offset, nbytes) \
    bsp_put_at((pid), (src), (dst), (offset), (nbytes), __FILE__, __LINE__)
#define bsp_get(pid, src, offset, dst, nbytes) \
    bsp_get_at((pid), (src), (offset), (dst), (nbytes), __FILE__, __LINE__)
#define bsp_hpput(pid, src, dst, offset, nbytes) \
    bsp_hpput_at((pid), (src), (dst), (offset), (nbytes), __FILE__, __LINE__)
#define bsp_hpget(pid, src, offset, dst, nbytes) \
    bsp_hpget_at((pid), (src), (offset), (dst), (nbytes), __FILE__, __LINE__)
#define bsp_send(pid, tag, payload, nbytes) bsp_send_at((pid), (tag), (payload), (nbytes), __FILE__, __LINE__)
#define bsp_set_tagsize(tag_nbytes) bsp_set_tagsize_at((tag_nbytes), __FILE__, __LINE__)
#endif

#ifdef __cplusplus
}
#endif

#endif /* REFLEX_BSP_H */
