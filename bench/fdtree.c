/*
 * Reference for bench/tree.py and bench/tree_scaling.py: the fdtree tree with the same system
 * calls, in the same order, as fsbench's tree workload (mkdirat, openat, write, close, fstatat,
 * unlinkat relative to the parent's descriptor), and no measurement beyond one clock read per
 * phase. Its rates are the ceiling fsbench's are compared with.
 *
 * usage: fdtree_c DIRS FILES SIZE_BLOCKS LEVELS START_DIR [PROCS [stat]]
 * PROCS independent processes (default 1) each make a tree of their own in START_DIR, starting
 * every phase together (a process-shared barrier), as `tree:threads=PROCS` does with threads;
 * `stat` adds the file-stat phase (`tree:stat`).
 * prints: "<phase> <seconds> <units>" for each phase: from the first process's start to the
 * last one's end, and all processes' units.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned D, F, S, L;
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

static void stat_files(int dir, unsigned level) {
    char n[32];
    struct stat st;
    for (unsigned f = F; f >= 1; f--) {
        name(n, level, 'F', f);
        if (fstatat(dir, n, &st, 0) < 0) die("fstatat");
        units++;
    }
    if (level > 0) each_subdir(dir, level, stat_files);
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

enum { MAX_PHASES = 5 };

/* What every process writes for the parent: its start, end and units per phase. */
struct shared {
    pthread_barrier_t start;
    struct { double start, end; unsigned long units; } phase[][MAX_PHASES];
};

static void walk_tree(int top, const char *const *phases, int nphases, struct shared *sh, int rank) {
    char base[64];
    snprintf(base, sizeof base, "LEVEL0.c.%d", getpid());
    for (int p = 0; p < nphases; p++) {
        const char *ph = phases[p];
        int first = strcmp(ph, "dir-create") == 0, last = strcmp(ph, "dir-remove") == 0;
        pthread_barrier_wait(&sh->start);
        units = 0;
        double t0 = now();
        if (first) {
            if (mkdirat(top, base, 0755) < 0) die("mkdirat base");
            units++;
        }
        int b = open_dir(top, base);
        if (b < 0) die("open base");
        if (first) create_dirs(b, L);
        if (strcmp(ph, "file-create") == 0) create_files(b, L);
        if (strcmp(ph, "file-stat") == 0) stat_files(b, L);
        if (strcmp(ph, "file-remove") == 0) remove_files(b, L);
        if (last) remove_dirs(b, L);
        close(b);
        if (last) {
            if (unlinkat(top, base, AT_REMOVEDIR) < 0) die("rmdir base");
            units++;
        }
        sh->phase[rank][p].start = t0;
        sh->phase[rank][p].end = now();
        sh->phase[rank][p].units = units;
    }
}

int main(int argc, char **argv) {
    if (argc < 6 || argc > 8 || (argc == 8 && strcmp(argv[7], "stat") != 0)) {
        fprintf(stderr, "usage: %s DIRS FILES SIZE LEVELS START_DIR [PROCS [stat]]\n", argv[0]);
        return 2;
    }
    D = atoi(argv[1]); F = atoi(argv[2]); S = atoi(argv[3]);
    L = atoi(argv[4]);
    int procs = argc > 6 ? atoi(argv[6]) : 1;
    if (procs < 1) die("PROCS must be at least 1");
    int top = open(argv[5], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0) die("open start dir");
    const char *with_stat[] = {"dir-create", "file-create", "file-stat", "file-remove", "dir-remove"};
    const char *plain[] = {"dir-create", "file-create", "file-remove", "dir-remove"};
    const char *const *phases = argc == 8 ? with_stat : plain;
    int nphases = argc == 8 ? 5 : 4;
    size_t size = sizeof(struct shared) + (size_t)procs * sizeof(((struct shared *)0)->phase[0]);
    struct shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) die("mmap");
    pthread_barrierattr_t attr;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&sh->start, &attr, procs);
    if (procs == 1) {
        walk_tree(top, phases, nphases, sh, 0);
    } else {
        for (int r = 0; r < procs; r++) {
            pid_t pid = fork();
            if (pid < 0) die("fork");
            if (pid == 0) {
                walk_tree(top, phases, nphases, sh, r);
                _exit(0);
            }
        }
        for (int r = 0; r < procs; r++) {
            int status;
            if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "a process failed\n");
                return 1;
            }
        }
    }
    for (int p = 0; p < nphases; p++) {
        double start = sh->phase[0][p].start, end = sh->phase[0][p].end;
        unsigned long total = 0;
        for (int r = 0; r < procs; r++) {
            if (sh->phase[r][p].start < start) start = sh->phase[r][p].start;
            if (sh->phase[r][p].end > end) end = sh->phase[r][p].end;
            total += sh->phase[r][p].units;
        }
        printf("%s %.6f %lu\n", phases[p], end - start, total);
    }
    return 0;
}
