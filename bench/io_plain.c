/* The plain program beside fio and fsbench's io workload (bench/fio_compare.py): the same
 * calls as a psync job at depth 1 — pread or pwrite of BS bytes at uniformly random
 * block-aligned offsets of FILE, each block once (a shuffled list), each call timed with
 * clock_gettime — and nothing else. Prints {"iops": N, "p50": US, "p99": US} on one line.
 *
 * With DEPTH, the same I/Os through io_uring as an io_uring job at that iodepth makes them
 * (fixedbufs, registerfiles, batches of 1): a ring set up as fio 3.33 sets it up
 * (COOP_TASKRUN, SINGLE_ISSUER, DEFER_TASKRUN), one io_uring_enter per submission until
 * DEPTH are in flight, then one that waits for a completion and the reaping of every
 * completion posted; p50 and p99 are completion latencies (from the submission).
 *
 *   io_plain FILE SIZE BS read|write DIRECT(0|1) [DEPTH]
 *
 * Build: cc -O2 -o io_plain bench/io_plain.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The I/Os of `blocks` at `depth` in flight through io_uring; their completion latencies
 * into `lat`. Returns 0, or -1 with errno set. */
static int uring_io(int fd, uint64_t n, uint64_t bs, int write_, unsigned depth,
                    const uint64_t *blocks, uint64_t *lat) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int ring = syscall(__NR_io_uring_setup, depth, &p);
    if (ring < 0) return -1;
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (cq_len > sq_len) sq_len = cq_len; /* one mapping for both (IORING_FEAT_SINGLE_MMAP) */
    char *sq = mmap(0, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || sqes == MAP_FAILED) return -1;
    char *cq = sq;
    unsigned *sq_tail = (unsigned *)(sq + p.sq_off.tail), *sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    unsigned *sq_array = (unsigned *)(sq + p.sq_off.array);
    unsigned *cq_head = (unsigned *)(cq + p.cq_off.head), *cq_tail = (unsigned *)(cq + p.cq_off.tail);
    unsigned *cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    /* One buffer per slot, registered; the file registered. */
    struct iovec *iov = calloc(depth, sizeof *iov);
    uint64_t *issued = calloc(depth, sizeof *issued);
    unsigned *free_slots = calloc(depth, sizeof *free_slots), nfree = depth;
    if (!iov || !issued || !free_slots) return -1;
    for (unsigned i = 0; i < depth; i++) {
        if (posix_memalign(&iov[i].iov_base, 4096, bs)) return -1;
        memset(iov[i].iov_base, 0x5a, bs);
        iov[i].iov_len = bs;
        free_slots[i] = i;
    }
    if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, iov, depth) < 0) return -1;
    if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_FILES, &fd, 1) < 0) return -1;
    uint64_t next = 0, done = 0;
    while (done < n) {
        while (nfree > 0 && next < n) {
            unsigned slot = free_slots[--nfree], tail = *sq_tail, idx = tail & *sq_mask;
            struct io_uring_sqe *e = &sqes[idx];
            memset(e, 0, sizeof *e);
            e->opcode = write_ ? IORING_OP_WRITE_FIXED : IORING_OP_READ_FIXED;
            e->flags = IOSQE_FIXED_FILE;
            e->fd = 0;
            e->addr = (uint64_t)(uintptr_t)iov[slot].iov_base;
            e->len = bs;
            e->off = blocks[next++] * bs;
            e->buf_index = slot;
            e->user_data = slot;
            sq_array[idx] = idx;
            __atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
            if (syscall(__NR_io_uring_enter, ring, 1, 0, 0, NULL, 0) < 0) return -1;
            issued[slot] = now_ns();
        }
        if (syscall(__NR_io_uring_enter, ring, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) return -1;
        uint64_t t = now_ns();
        unsigned head = *cq_head;
        while (head != __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
            struct io_uring_cqe *c = &cqes[head & *cq_mask];
            if (c->res != (int)bs) {
                errno = c->res < 0 ? -c->res : EIO;
                return -1;
            }
            lat[done++] = t - issued[c->user_data];
            free_slots[nfree++] = (unsigned)c->user_data;
            head++;
        }
        __atomic_store_n(cq_head, head, __ATOMIC_RELEASE);
    }
    close(ring);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: io_plain FILE SIZE BS read|write DIRECT [DEPTH]\n");
        return 2;
    }
    uint64_t size = strtoull(argv[2], NULL, 10), bs = strtoull(argv[3], NULL, 10);
    int write_ = strcmp(argv[4], "write") == 0;
    int flags = (write_ ? O_WRONLY : O_RDONLY) | (atoi(argv[5]) ? O_DIRECT : 0);
    int fd = open(argv[1], flags);
    if (fd < 0 || bs == 0 || size < bs) {
        perror(argv[1]);
        return 1;
    }
    uint64_t n = size / bs;
    uint64_t *blocks = malloc(n * sizeof *blocks), *lat = malloc(n * sizeof *lat);
    void *buf;
    if (!blocks || !lat || posix_memalign(&buf, 4096, bs)) {
        return 1;
    }
    memset(buf, 0x5a, bs);
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (uint64_t i = 0; i < n; i++) {
        blocks[i] = i;
    }
    for (uint64_t i = n - 1; i > 0; i--) { /* Fisher-Yates with xorshift */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t j = x % (i + 1), t = blocks[i];
        blocks[i] = blocks[j], blocks[j] = t;
    }
    unsigned depth = argc == 7 ? (unsigned)atoi(argv[6]) : 0;
    uint64_t start = now_ns();
    if (depth > 0 && uring_io(fd, n, bs, write_, depth, blocks, lat) < 0) {
        perror("io_uring");
        return 1;
    }
    for (uint64_t i = 0; depth == 0 && i < n; i++) {
        uint64_t t0 = now_ns();
        ssize_t r = write_ ? pwrite(fd, buf, bs, blocks[i] * bs) : pread(fd, buf, bs, blocks[i] * bs);
        uint64_t t1 = now_ns();
        if (r != (ssize_t)bs) {
            perror("io");
            return 1;
        }
        lat[i] = t1 - t0;
    }
    double secs = (now_ns() - start) / 1e9;
    qsort(lat, n, sizeof *lat, cmp);
    printf("{\"iops\": %.1f, \"p50\": %.3f, \"p99\": %.3f}\n", n / secs, lat[n / 2] / 1e3,
           lat[n * 99 / 100] / 1e3);
    close(fd);
    return 0;
}
