/*
 * Reference for bench/tree.sh: the fdtree tree with the same system calls, in the same order,
 * as fsbench's tree workload (mkdirat, openat, write, close, unlinkat relative to the parent's
 * descriptor), and no measurement beyond one clock read per phase. Its rates are the ceiling
 * fsbench's are compared with.
 *
 * usage: fdtree_c DIRS FILES SIZE_BLOCKS LEVELS START_DIR
 * prints: "<phase> <seconds> <units>" for each of the four phases.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned D, F, S;
static char zeros[4096];
static unsigned long units;

static void die(const char *what) { perror(what); exit(1); }

static void name(char *buf, unsigned level, char kind, unsigned n) {
    sprintf(buf, "L%u%c%u", level, kind, n);
}

static int open_dir(int parent, const char *n) {
    return openat(parent, n, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

typedef void (*visit_fn)(int, unsigned);

static void each_subdir(int dir, unsigned level, visit_fn visit) {
    char n[32];
    for (unsigned d = D; d >= 1; d--) {
        name(n, level, 'D', d);
        int child = open_dir(dir, n);
        if (child < 0) die("openat dir");
        visit(child, level - 1);
        close(child);
    }
}

static void create_dirs(int dir, unsigned level) {
    char n[32];
    if (level == 0) return;
    for (unsigned d = D; d >= 1; d--) {
        name(n, level, 'D', d);
        if (mkdirat(dir, n, 0755) < 0) die("mkdirat");
        units++;
    }
    if (level > 1) each_subdir(dir, level, create_dirs);
}

static void create_files(int dir, unsigned level) {
    char n[32];
    for (unsigned f = F; f >= 1; f--) {
        name(n, level, 'F', f);
        int fd = openat(dir, n, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) die("openat create");
        for (unsigned b = 0; b < S; b++)
            if (write(fd, zeros, sizeof zeros) != sizeof zeros) die("write");
        close(fd);
        units++;
    }
    if (level > 0) each_subdir(dir, level, create_files);
}

static void remove_files(int dir, unsigned level) {
    char n[32];
    for (unsigned f = F; f >= 1; f--) {
        name(n, level, 'F', f);
        if (unlinkat(dir, n, 0) < 0) die("unlinkat");
        units++;
    }
    if (level > 0) each_subdir(dir, level, remove_files);
}

static void remove_dirs(int dir, unsigned level) {
    char n[32];
    if (level > 1) each_subdir(dir, level, remove_dirs);
    if (level > 0)
        for (unsigned d = D; d >= 1; d--) {
            name(n, level, 'D', d);
            if (unlinkat(dir, n, AT_REMOVEDIR) < 0) die("rmdir");
            units++;
        }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s DIRS FILES SIZE LEVELS START_DIR\n", argv[0]);
        return 2;
    }
    D = atoi(argv[1]); F = atoi(argv[2]); S = atoi(argv[3]);
    unsigned L = atoi(argv[4]);
    int top = open(argv[5], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0) die("open start dir");
    char base[64];
    snprintf(base, sizeof base, "LEVEL0.c.%d", getpid());
    const char *phases[] = {"dir-create", "file-create", "file-remove", "dir-remove"};
    for (int p = 0; p < 4; p++) {
        units = 0;
        double t0 = now();
        if (p == 0) {
            if (mkdirat(top, base, 0755) < 0) die("mkdirat base");
            units++;
        }
        int b = open_dir(top, base);
        if (b < 0) die("open base");
        if (p == 0) create_dirs(b, L);
        if (p == 1) create_files(b, L);
        if (p == 2) remove_files(b, L);
        if (p == 3) remove_dirs(b, L);
        close(b);
        if (p == 3) {
            if (unlinkat(top, base, AT_REMOVEDIR) < 0) die("rmdir base");
            units++;
        }
        double t = now() - t0;
        printf("%s %.6f %lu\n", phases[p], t, units);
    }
    return 0;
}
