/* The plain program beside fio and fsbench's io workload (bench/fio_compare.py): the same
 * calls as a psync job at depth 1 — pread or pwrite of BS bytes at uniformly random
 * block-aligned offsets of FILE, each block once (a shuffled list), each call timed with
 * clock_gettime — and nothing else. Prints {"iops": N, "p50": US, "p99": US} on one line.
 *
 *   io_plain FILE SIZE BS read|write DIRECT(0|1)
 *
 * Build: cc -O2 -o io_plain bench/io_plain.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: io_plain FILE SIZE BS read|write DIRECT\n");
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
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < n; i++) {
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
