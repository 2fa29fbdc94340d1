/*
 * Reference for bench/ffsb_fidelity.py: FFSB's read, write, create, delete and stat operations
 * with the system calls FFSB 6.0-RC1 makes for them (read from its fileops.c, not copied):
 *   read    open(O_RDONLY), stat, lseek to a random unaligned offset, read_size in
 *           read_blocksize reads, close; one transaction per read call
 *   write   open(O_WRONLY), stat, lseek, write_size in write_blocksize writes, close
 *   create  open(O_CREAT|O_RDWR|O_TRUNC, 0700), a random size in write_blocksize writes, close;
 *           a deleted file's name is reused first, as FFSB's "holes" are
 *   delete  unlink; stat  stat; one transaction each
 * on a file set built as FFSB builds it (sizes uniform in [min, max], zero-filled, 4 KiB
 * writes, each file in the root or one of the subdirectories at random), by THREADS threads for
 * SECONDS, then sync, all inside the timed region as in FFSB. Nothing else: a mutex around the
 * file table, one counter per thread, no statistics. Its Trans/sec is the rate of the
 * system calls alone, that FFSB's and fsbench's are each compared with.
 *
 * usage: ffsb_plain DIR THREADS SECONDS FILES DIRS MIN MAX READ_SIZE READ_BS WRITE_SIZE
 *                     WRITE_BS W_READ W_WRITE W_CREATE W_DELETE W_STAT
 * prints: "transactions <n> seconds <s> tx/s <rate>"
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { READ, WRITE, CREATE, DELETE, STAT, OPS };

static const char *dir;
static unsigned files, dirs, weights[OPS], weight_sum;
static uint64_t min_size, max_size, read_size, read_bs, write_size, write_bs;
static atomic_int stop;

/* The file table: names by number, sizes, who uses each, the live numbers and the holes. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char **names;
static uint64_t *sizes;
static int *users; /* readers, or -1 while being created or deleted */
static unsigned *live, *holes, n_live, n_holes, n_names, capacity;

static void die(const char *what) { perror(what); exit(1); }

static uint64_t next(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* A live file nobody is deleting; for delete, one nobody uses, taken out of the live set. */
static unsigned pick(uint64_t *rng, int for_delete) {
    for (;;) {
        pthread_mutex_lock(&lock);
        if (n_live == 0) { fprintf(stderr, "no more files to operate on\n"); exit(1); }
        unsigned at = next(rng) % n_live, id = live[at];
        if (users[id] == 0 || (!for_delete && users[id] > 0)) {
            if (for_delete) { users[id] = -1; live[at] = live[--n_live]; }
            else users[id]++;
            pthread_mutex_unlock(&lock);
            return id;
        }
        pthread_mutex_unlock(&lock);
    }
}

static void release(unsigned id) {
    pthread_mutex_lock(&lock);
    users[id]--;
    pthread_mutex_unlock(&lock);
}

/* A number for a new file (a hole first), with its name. */
static unsigned add(uint64_t *rng, uint64_t size) {
    pthread_mutex_lock(&lock);
    unsigned id;
    if (n_holes) id = holes[--n_holes];
    else {
        if (n_names == capacity) { fprintf(stderr, "file table full\n"); exit(1); }
        id = n_names++;
        unsigned d = next(rng) % (dirs + 1);
        if (d == 0 ? asprintf(&names[id], "%s/datafile%u", dir, id) < 0
                   : asprintf(&names[id], "%s/datadir%u/datafile%u", dir, d - 1, id) < 0)
            die("asprintf");
    }
    sizes[id] = size;
    users[id] = -1;
    pthread_mutex_unlock(&lock);
    return id;
}

static uint64_t fill(int fd, uint64_t size, uint64_t block, char *buf) {
    uint64_t calls = 0;
    for (uint64_t done = 0; done < size; done += block, calls++) {
        uint64_t n = size - done < block ? size - done : block;
        if (write(fd, buf, n) != (ssize_t)n) die("write");
    }
    return calls;
}

static uint64_t create(uint64_t *rng, char *buf, uint64_t block) {
    uint64_t size = min_size + (max_size > min_size ? next(rng) % (max_size - min_size) : 0);
    unsigned id = add(rng, size);
    int fd = open(names[id], O_CREAT | O_RDWR | O_TRUNC, 0700);
    if (fd < 0) die(names[id]);
    uint64_t calls = fill(fd, size, block, buf);
    close(fd);
    pthread_mutex_lock(&lock);
    users[id] = 0;
    live[n_live++] = id;
    pthread_mutex_unlock(&lock);
    return calls;
}

static uint64_t range(uint64_t *rng, unsigned id, int writing, char *buf) {
    uint64_t amount = writing ? write_size : read_size, block = writing ? write_bs : read_bs;
    int fd = open(names[id], writing ? O_WRONLY : O_RDONLY);
    struct stat st;
    if (fd < 0 || stat(names[id], &st)) die(names[id]);
    uint64_t span = st.st_size - amount, calls = 0;
    if (span && lseek(fd, next(rng) % span, SEEK_SET) < 0) die("lseek");
    for (uint64_t done = 0; done < amount; done += block, calls++) {
        ssize_t n = writing ? write(fd, buf, block) : read(fd, buf, block);
        if (n != (ssize_t)block) die(writing ? "write" : "read");
    }
    close(fd);
    return calls;
}

static void *worker(void *arg) {
    uint64_t *count = arg, rng = 0x9E3779B97F4A7C15ULL * (uintptr_t)arg | 1, tx = 0;
    char *buf = aligned_alloc(4096, read_bs > write_bs ? read_bs : write_bs);
    memset(buf, 0, read_bs > write_bs ? read_bs : write_bs);
    struct stat st;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        unsigned w = next(&rng) % weight_sum, op = 0, id;
        while (w >= weights[op]) w -= weights[op++];
        switch (op) {
        case READ: case WRITE:
            id = pick(&rng, 0);
            tx += range(&rng, id, op == WRITE, buf);
            release(id);
            break;
        case CREATE: tx += create(&rng, buf, write_bs); break;
        case DELETE:
            id = pick(&rng, 1);
            if (unlink(names[id])) die(names[id]);
            pthread_mutex_lock(&lock);
            holes[n_holes++] = id;
            pthread_mutex_unlock(&lock);
            tx++;
            break;
        case STAT:
            id = pick(&rng, 0);
            if (stat(names[id], &st)) die(names[id]);
            release(id);
            tx++;
        }
    }
    *count = tx;
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 17) {
        fprintf(stderr, "usage: ffsb_plain DIR THREADS SECONDS FILES DIRS MIN MAX READ_SIZE "
                        "READ_BS WRITE_SIZE WRITE_BS W_READ W_WRITE W_CREATE W_DELETE W_STAT\n");
        return 2;
    }
    dir = argv[1];
    unsigned threads = atoi(argv[2]);
    double seconds = atof(argv[3]);
    files = atoi(argv[4]); dirs = atoi(argv[5]);
    min_size = atoll(argv[6]); max_size = atoll(argv[7]);
    read_size = atoll(argv[8]); read_bs = atoll(argv[9]);
    write_size = atoll(argv[10]); write_bs = atoll(argv[11]);
    for (int op = 0; op < OPS; op++) weight_sum += weights[op] = atoi(argv[12 + op]);
    if (!threads || !weight_sum || !read_bs || !write_bs || min_size < read_size || min_size < write_size) {
        fprintf(stderr, "ffsb_plain: bad arguments\n");
        return 2;
    }
    capacity = files * 4 + 4096;
    names = calloc(capacity, sizeof *names); sizes = calloc(capacity, sizeof *sizes);
    users = calloc(capacity, sizeof *users); live = calloc(capacity, sizeof *live);
    holes = calloc(capacity, sizeof *holes);
    char path[4096];
    for (unsigned d = 0; d < dirs; d++) {
        snprintf(path, sizeof path, "%s/datadir%u", dir, d);
        if (mkdir(path, 0700)) die(path);
    }
    uint64_t rng = 42;
    char *zeros = calloc(1, 4096);
    for (unsigned i = 0; i < files; i++) create(&rng, zeros, 4096);
    sync();
    pthread_t tid[threads];
    uint64_t counts[threads];
    double start = now();
    for (unsigned t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, &counts[t])) die("pthread_create");
    struct timespec wait = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&wait, NULL);
    atomic_store(&stop, 1);
    uint64_t total = 0;
    for (unsigned t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        total += counts[t];
    }
    sync();
    double took = now() - start;
    printf("transactions %llu seconds %.3f tx/s %.1f\n", (unsigned long long)total, took, total / took);
    return 0;
}
