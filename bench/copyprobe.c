/*
 * copyprobe.c -- how fast can two processes move one large message on this machine?
 *
 * No MPI: a sender and a receiver process (forked, pinned to CPUs 0 and 1) move messages of
 * each size with four copy engines (six modes) and print what each costs, so that a change to Reflex's
 * rendezvous (crates/reflex-engine/src/single_copy.rs) can be judged before it is built:
 *
 *   cma     the receiver alone reads the message with one process_vm_readv (Reflex today)
 *   coop    cooperative copy: the message is cut into chunks; both sides claim chunks with an
 *           atomic fetch_add on a shared counter, the receiver reads its chunks with
 *           process_vm_readv, the sender writes its own with process_vm_writev; a shared done
 *           counter tells the receiver when every byte is in
 *   pipe    double copy through shared memory: the sender copies chunks into SLOTS shared
 *           slots (cache-resident), the receiver copies them out, both in parallel
 *   pipe-nt the same, but the receiver copies out with non-temporal stores (no read for
 *           ownership of the destination lines: one memory transfer per byte instead of two)
 *   memcpy  one process copies the message (the reference; a single core's limit)
 *   memcpy-nt  the same with non-temporal stores
 *
 * The receiver pins itself to CPU 1 only after each fork (the sender takes CPU 0), so the
 * sender never starts behind a spinning receiver.  On a busy machine, raise the probe's share
 * rather than its real-time class: `echo -20 > /proc/self/autogroup` in the shell that runs it
 * (with autogroup scheduling `nice` alone changes little); under `chrt -f` the coop mode stalls,
 * because pinning pages can wait on per-CPU kernel work that a spinning real-time task starves.
 *
 * Like bench/pt2pt.c's bandwidth test, the receiver moves each message into the next of
 * WINDOW buffers, so large sizes stream from and to memory instead of the caches.  Each line:
 * best wall-clock MB/s over the rounds, and the copy's own CPU cost on each side in MB per
 * CPU-second (CLOCK_THREAD_CPUTIME_ID around the copy calls only, so a busy machine inflates
 * it less than the wall time); "share" is the receiver's part of the bytes.  The last message
 * of every round is checked byte for byte.
 *
 * Build and run (2 CPUs or more):
 *   cc -O2 -o build/bench/copyprobe bench/copyprobe.c && build/bench/copyprobe
 *   cc -O2 -DSLOTS=4 -DSLOT_BYTES=16384 ...   pipe slots like Reflex's 64 KiB rings and 16 KiB chunks
 *   build/bench/copyprobe -s 65536,4194304 -c 262144 -r 5 -t 0.3
 */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 64
#ifndef SLOTS /* pipe: shared slots (-DSLOTS=4 -DSLOT_BYTES=16384: Reflex's 64 KiB ring, 16 KiB chunks) */
#define SLOTS 8
#endif
#ifndef SLOT_BYTES
#define SLOT_BYTES (64 * 1024)
#endif
#define LINE 128

enum mode { CMA, COOP, PIPE, PIPE_NT, MEMCPY, MEMCPY_NT, NMODES };
static const char *mode_name[NMODES] = {"cma", "coop", "pipe", "pipe-nt", "memcpy", "memcpy-nt"};

/* Shared between the two processes; every counter on its own cache line. */
struct shared {
    _Alignas(LINE) _Atomic long go;    /* message number the receiver started; -1: stop */
    _Alignas(LINE) _Atomic long claim; /* next chunk to claim (coop) */
    _Alignas(LINE) _Atomic long done;  /* bytes copied into place (coop) */
    _Alignas(LINE) _Atomic long ack;   /* last message the sender finished with */
    _Alignas(LINE) _Atomic long head;  /* slots the receiver emptied (pipe) */
    _Alignas(LINE) _Atomic long tail;  /* slots the sender filled (pipe) */
    _Alignas(LINE) uintptr_t dst;      /* receiver's buffer for the current message */
    pid_t receiver;
    double send_cpu; /* sender's CPU seconds in copy calls, and its bytes (after stop) */
    long send_bytes;
    _Alignas(LINE) char slot[SLOTS][SLOT_BYTES];
};

struct options {
    size_t sizes[32];
    int nsizes;
    size_t chunk; /* coop chunk (0: a quarter of the message, at least 64 KiB) */
    int rounds;
    double seconds;
};

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        perror("copyprobe: sched_setaffinity (running unpinned)");
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* Copies m bytes with non-temporal stores (dst 16-byte aligned, m a multiple of 64). */
static void copy_nt(char *dst, const char *src, size_t m)
{
    __m128i *d = (__m128i *)dst;
    const __m128i *v = (const __m128i *)src;
    for (size_t i = 0; i < m / 16; i += 4) {
        __m128i a = _mm_loadu_si128(v + i), b = _mm_loadu_si128(v + i + 1);
        __m128i c = _mm_loadu_si128(v + i + 2), e = _mm_loadu_si128(v + i + 3);
        _mm_stream_si128(d + i, a);
        _mm_stream_si128(d + i + 1, b);
        _mm_stream_si128(d + i + 2, c);
        _mm_stream_si128(d + i + 3, e);
    }
    _mm_sfence();
}

/* One CMA call of m bytes: read from (pid, remote) into local, or write local to it. */
static void cma(int write, pid_t pid, char *local, uintptr_t remote, size_t m)
{
    struct iovec l = {local, m}, r = {(void *)remote, m};
    ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n != (ssize_t)m)
        die(write ? "copyprobe: process_vm_writev" : "copyprobe: process_vm_readv");
}

/* Claims and copies coop chunks until none is left; returns the CPU seconds spent copying. */
static double coop_claim(struct shared *sh, int sender, pid_t peer, char *src, char *dst, size_t n,
                         size_t chunk, long *bytes)
{
    long chunks = (long)((n + chunk - 1) / chunk);
    double cpu = 0;
    for (;;) {
        long i = atomic_fetch_add(&sh->claim, 1);
        if (i >= chunks)
            return cpu;
        size_t off = (size_t)i * chunk, m = n - off < chunk ? n - off : chunk;
        double t = clock_s(CLOCK_THREAD_CPUTIME_ID);
        if (sender)
            cma(1, peer, src + off, (uintptr_t)dst + off, m);
        else
            cma(0, peer, dst + off, (uintptr_t)src + off, m);
        cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - t;
        *bytes += (long)m;
        atomic_fetch_add_explicit(&sh->done, (long)m, memory_order_release);
    }
}

/* The sender's side of one pipelined message: fill slots as the receiver empties them. */
static double pipe_send(struct shared *sh, const char *src, size_t n)
{
    double cpu = 0;
    long k = 0;
    for (size_t off = 0; off < n; k++) {
        while (atomic_load_explicit(&sh->head, memory_order_acquire) + SLOTS <= k)
            ;
        size_t m = n - off < SLOT_BYTES ? n - off : SLOT_BYTES;
        double t = clock_s(CLOCK_THREAD_CPUTIME_ID);
        memcpy(sh->slot[k % SLOTS], src + off, m);
        cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - t;
        off += m;
        atomic_store_explicit(&sh->tail, k + 1, memory_order_release);
    }
    return cpu;
}

/* The receiver's side of one pipelined message. */
static double pipe_recv(struct shared *sh, char *dst, size_t n, int nt)
{
    double cpu = 0;
    long k = 0;
    for (size_t off = 0; off < n; k++) {
        while (atomic_load_explicit(&sh->tail, memory_order_acquire) <= k)
            ;
        size_t m = n - off < SLOT_BYTES ? n - off : SLOT_BYTES;
        double t = clock_s(CLOCK_THREAD_CPUTIME_ID);
        if (nt)
            copy_nt(dst + off, sh->slot[k % SLOTS], m);
        else
            memcpy(dst + off, sh->slot[k % SLOTS], m);
        cpu += clock_s(CLOCK_THREAD_CPUTIME_ID) - t;
        off += m;
        atomic_store_explicit(&sh->head, k + 1, memory_order_release);
    }
    return cpu;
}

/* The sender: joins every message the receiver starts until told to stop. */
static void sender(struct shared *sh, enum mode mode, char *src, size_t n, size_t chunk)
{
    double cpu = 0;
    long bytes = 0;
    for (long msg = 1;; msg++) {
        long go;
        while ((go = atomic_load_explicit(&sh->go, memory_order_acquire)) != msg && go != -1)
            ;
        if (go == -1)
            break;
        if (mode == COOP)
            cpu += coop_claim(sh, 1, sh->receiver, src, (char *)sh->dst, n, chunk, &bytes);
        else if (mode == PIPE || mode == PIPE_NT) {
            cpu += pipe_send(sh, src, n);
            bytes += (long)n;
        }
        atomic_store_explicit(&sh->ack, msg, memory_order_release);
    }
    sh->send_cpu = cpu;
    sh->send_bytes = bytes;
}

/* The receiver's side of one message into dst; returns the CPU seconds spent copying. */
static double receive(struct shared *sh, enum mode mode, pid_t src_pid, char *src, char *dst, size_t n,
                      size_t chunk, long msg, long *bytes)
{
    double cpu = 0;
    atomic_store(&sh->claim, 0);
    atomic_store(&sh->done, 0);
    atomic_store(&sh->head, 0);
    atomic_store(&sh->tail, 0);
    sh->dst = (uintptr_t)dst;
    atomic_store_explicit(&sh->go, msg, memory_order_release);
    if (mode == COOP) {
        cpu = coop_claim(sh, 0, src_pid, src, dst, n, chunk, bytes);
        while (atomic_load_explicit(&sh->done, memory_order_acquire) < (long)n)
            ;
    } else if (mode == PIPE || mode == PIPE_NT) {
        cpu = pipe_recv(sh, dst, n, mode == PIPE_NT);
        *bytes += (long)n;
    } else {
        double t = clock_s(CLOCK_THREAD_CPUTIME_ID);
        if (mode == CMA)
            cma(0, src_pid, dst, (uintptr_t)src, n);
        else if (mode == MEMCPY_NT)
            copy_nt(dst, src, n);
        else
            memcpy(dst, src, n);
        cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - t;
        *bytes += (long)n;
    }
    /* The next message resets the counters: wait until the sender has left this one. */
    while (atomic_load_explicit(&sh->ack, memory_order_acquire) != msg)
        ;
    return cpu;
}

struct result {
    double wall_mbps, recv_cpu_mbps, send_cpu_mbps, share;
};

/* The receiver: one timed round of messages, the last one checked; prints nothing. */
static int receiver(struct shared *sh, enum mode mode, pid_t src_pid, char *src, char *win, size_t n,
                    size_t chunk, double seconds, struct result *r)
{
    double cpu = 0, start = clock_s(CLOCK_MONOTONIC), wall;
    long bytes = 0, msg = 0;
    do {
        msg++;
        cpu += receive(sh, mode, src_pid, src, win + (size_t)(msg % WINDOW) * n, n, chunk, msg, &bytes);
        wall = clock_s(CLOCK_MONOTONIC) - start;
    } while (wall < seconds);
    char *check = win + (size_t)((msg + 1) % WINDOW) * n;
    memset(check, 0, n);
    msg++;
    receive(sh, mode, src_pid, src, check, n, chunk, msg, &(long){0});
    int bad = memcmp(check, src, n) != 0;
    atomic_store_explicit(&sh->go, -1, memory_order_release);
    r->wall_mbps = (double)n * (double)(msg - 1) / wall / 1e6;
    r->recv_cpu_mbps = cpu > 0 ? (double)bytes / cpu / 1e6 : 0;
    r->share = (double)bytes / ((double)n * (double)(msg - 1));
    return bad;
}

/* One round of one mode and size: fork the sender, receive, collect its CPU cost. */
static int run_round(struct shared *sh, enum mode mode, char *src, char *win, size_t n, size_t chunk,
                     double seconds, struct result *r)
{
    atomic_store(&sh->go, 0);
    atomic_store(&sh->ack, 0);
    sh->receiver = getpid();
    pid_t child = fork();
    if (child < 0)
        die("copyprobe: fork");
    if (child == 0) {
        pin(0);
        sender(sh, mode, src, n, chunk);
        _exit(0);
    }
    pin(1);
    int bad = receiver(sh, mode, child, src, win, n, chunk, seconds, r);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fprintf(stderr, "copyprobe: the sender failed\n"), 1;
    r->send_cpu_mbps = sh->send_cpu > 0 ? (double)sh->send_bytes / sh->send_cpu / 1e6 : 0;
    if (bad)
        fprintf(stderr, "copyprobe: %s moved wrong bytes at %zu B\n", mode_name[mode], n);
    return bad;
}

static int parse(int argc, char **argv, struct options *o)
{
    static const size_t defaults[] = {16384, 65536, 262144, 1048576, 4194304};
    memset(o, 0, sizeof *o);
    memcpy(o->sizes, defaults, sizeof defaults);
    o->nsizes = 5;
    o->rounds = 3;
    o->seconds = 0.2;
    int c;
    while ((c = getopt(argc, argv, "s:c:r:t:")) != -1) {
        switch (c) {
        case 's':
            o->nsizes = 0;
            for (char *p = strtok(optarg, ","); p && o->nsizes < 32; p = strtok(NULL, ","))
                o->sizes[o->nsizes++] = strtoul(p, NULL, 0);
            break;
        case 'c': o->chunk = strtoul(optarg, NULL, 0); break;
        case 'r': o->rounds = atoi(optarg); break;
        case 't': o->seconds = atof(optarg); break;
        default: return -1;
        }
    }
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] == 0 || o->sizes[i] % 4096 != 0)
            return -1;
    return o->rounds > 0 && o->seconds > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct options o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: copyprobe [-s bytes,bytes,... (multiples of 4096)] [-c coop_chunk] [-r rounds] [-t seconds]\n");
        return 2;
    }
    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        die("copyprobe: mmap");
    setvbuf(stdout, NULL, _IOLBF, 0);
    int failed = 0;
    printf("# copyprobe: best of %d rounds of %.2fs; MB/s = 1e6 B/s; cpu = MB per CPU-second in copy calls\n",
           o.rounds, o.seconds);
    printf("%-9s %9s %8s %9s %9s %9s %6s\n", "mode", "bytes", "chunk", "wall", "recv-cpu", "send-cpu", "share");
    for (int s = 0; s < o.nsizes; s++) {
        size_t n = o.sizes[s];
        size_t chunk = o.chunk ? o.chunk : (n / 4 > SLOT_BYTES ? n / 4 : SLOT_BYTES);
        char *src = aligned_alloc(4096, n), *win = aligned_alloc(4096, n * WINDOW);
        if (!src || !win)
            die("copyprobe: malloc");
        for (size_t i = 0; i < n; i++)
            src[i] = (char)(i * 131 + 7);
        /* The sender never touches the window: keep it out of every fork, or each round's
         * first write to a page would copy it (copy-on-write) inside the timed loop. */
        if (madvise(win, n * WINDOW, MADV_DONTFORK) != 0)
            die("copyprobe: madvise");
        memset(win, 1, n * WINDOW);
        for (int m = 0; m < NMODES; m++) {
            struct result best = {0};
            for (int r = 0; r < o.rounds; r++) {
                struct result got = {0};
                failed |= run_round(sh, (enum mode)m, src, win, n, chunk, o.seconds, &got);
                if (got.wall_mbps > best.wall_mbps)
                    best = got;
            }
            printf("%-9s %9zu %8zu %9.0f %9.0f %9.0f %6.2f\n", mode_name[m], n, m == COOP ? chunk : (size_t)0,
                   best.wall_mbps, best.recv_cpu_mbps, best.send_cpu_mbps, best.share);
            fflush(stdout);
        }
        free(src);
        free(win);
    }
    return failed;
}
