// The kernel half of `fsbench capture --tracer bpf`: records the system calls of one cgroup's
// tasks into a ring buffer that the loader drains in batches, without stopping the program.
//
// sys_enter stashes a selected call's start and arguments per task; sys_exit emits one
// record with the strings its path arguments name (and an extended attribute's name, bounded
// as they are) and the user structure it needs;
// sched_process_fork emits a fork record in the parent, before the child can run, so that
// the child's descriptor table is known before its first call.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define PATH_MAX 4096
#define NR_MAX 512
#define FORK_NR 0xffffffffu

// What the loader says of each call number (SELECT's values).
#define SEL_TRACED (1u << 31)
// The clone family: the fork record stands for the call.
#define SEL_NO_EXIT (1u << 30)
// execve and execveat: the first that succeeds is the program's own, and starts the capture.
#define SEL_EXEC (1u << 29)
// Where a forking call's clone flags are: its first argument (clone), the first field of the
// structure it points to (clone3), or fixed (vfork: CLONE_VM | CLONE_VFORK; fork: none).
#define SEL_FLAGS_ARG0 (1u << 28)
#define SEL_FLAGS_STRUCT (1u << 27)
#define SEL_FLAGS_VFORK (1u << 26)
#define CLONE_VM_VFORK 0x4100
// close: a record at its entry too. The descriptor is free for another thread's open before
// close returns, so the open's record may come before close's: the entry's says it first.
#define SEL_ENTER_RECORD (1u << 25)
// wait4: no record; a parent that waited for a child takes the child's cost (COST).
#define SEL_WAITS (1u << 24)
// The setxattr family: a POSIX ACL's value is read too. (Bits 0-5 are the paths, 8-11 and
// 16-23 the data's argument and length.)
#define SEL_VALUE (1u << 6)
#define SEL_PATHS 0x3fu
#define SEL_DATA_ARG(v) (((v) >> 8) & 0xfu)
#define SEL_DATA_LEN(v) (((v) >> 16) & 0xffu)

// CONFIG's slots.
#define CFG_CGROUP 0
#define CFG_ARMED 1
// What a traced system call costs outside these programs (the kernel's slow path into and
// out of a traced call, the programs' dispatch), in ns: measured by the loader.
#define CFG_DISPATCH_NS 2

// LOST's slots.
#define LOST_FULL 0
#define LOST_NO_STASH 1

// record.flags
#define REC_DATA 1u
#define REC_PATH1_UNREAD 2u
#define REC_PATH2_UNREAD 4u
#define REC_DATA_UNREAD 8u
#define REC_PATH1 16u
#define REC_PATH2 32u
#define REC_ENTER 64u
#define REC_VALUE 128u

// The longest attribute value read (an ACL of 2,000 entries).
#define VALUE_MAX 16384

struct stash {
	__u64 start_ns;
	__u64 args[6];
	__u32 nr;
	__u32 pad;
	__u64 cost_ns;
};

// One call (or fork) as the loader reads it; the strings follow it, the second right after
// the first.
struct record {
	__u64 start_ns;
	__u64 end_ns;
	__u32 tid;
	__u32 pid;
	__u32 nr;
	__u16 len1;
	__u16 len2;
	__s64 ret;
	__u64 args[6];
	__u64 data[3];
	__u32 flags;
	__u8 path_arg1;
	__u8 path_arg2;
	// The value's length, after the second string (REC_VALUE).
	__u16 len3;
	// What tracing had cost the task before the call started (COST's value then).
	__u64 cost_ns;
};

struct scratch {
	struct record rec;
	char paths[2 * PATH_MAX + VALUE_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NR_MAX);
	__type(key, __u32);
	__type(value, __u32);
} SELECT SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} CONFIG SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct stash);
} STARTS SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} SCRATCH SEC(".maps");

// What tracing has cost each task so far, in ns: the time in these programs at each of its
// system calls, the dispatch's measured cost besides; a child starts with its parent's, a
// parent that waited for a child goes on with the child's when it is more (as the program's
// clock would, where the child had cost it). The records carry it, so that the program's
// own clock is its clock under capture less this.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} COST SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} LOST SEC(".maps");

// Its size is set by the loader.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 26);
} EVENTS SEC(".maps");

struct sys_enter_ctx {
	__u64 common;
	long id;
	unsigned long args[6];
};

struct sys_exit_ctx {
	__u64 common;
	long id;
	long ret;
};

static __always_inline __u64 *config(__u32 slot)
{
	return bpf_map_lookup_elem(&CONFIG, &slot);
}

static __always_inline int in_cgroup(void)
{
	__u64 *cgroup = config(CFG_CGROUP);
	return cgroup && *cgroup && bpf_get_current_cgroup_id() == *cgroup;
}

static __always_inline __u64 cost_of(__u32 tid)
{
	__u64 *c = bpf_map_lookup_elem(&COST, &tid);
	return c ? *c : 0;
}

// Adds to task `tid`'s cost, `c` (COST's value, looked up by the caller; NULL when it has
// none yet), the time since `t0` and half a call's dispatch (each call runs both programs).
static __always_inline void charge_to(__u64 *c, __u32 tid, __u64 t0)
{
	__u64 *dispatch = config(CFG_DISPATCH_NS);
	__u64 add = bpf_ktime_get_ns() - t0 + (dispatch ? *dispatch / 2 : 0);
	if (c)
		*c += add;
	else
		bpf_map_update_elem(&COST, &tid, &add, BPF_NOEXIST);
}

static __always_inline void charge(__u32 tid, __u64 t0)
{
	charge_to(bpf_map_lookup_elem(&COST, &tid), tid, t0);
}

static __always_inline void lost(__u32 why)
{
	__u64 *n = bpf_map_lookup_elem(&LOST, &why);
	if (n)
		*n += 1;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter(struct sys_enter_ctx *ctx)
{
	__u64 t0 = bpf_ktime_get_ns();
	if (!in_cgroup())
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	long id = ctx->id;
	__u32 nr = id;
	__u32 *sel = id < 0 || id >= NR_MAX ? 0 : bpf_map_lookup_elem(&SELECT, &nr);
	// One lookup of the task's cost for the stash and the charge: the map is shared by
	// every task's calls.
	__u64 *cost = bpf_map_lookup_elem(&COST, &tid);
	if (!sel || !(*sel & SEL_TRACED)) {
		charge_to(cost, tid, t0);
		return 0;
	}
	struct stash s = {};
	s.start_ns = bpf_ktime_get_ns();
	s.nr = nr;
	s.cost_ns = (cost ? *cost : 0) + (s.start_ns - t0);
#pragma unroll
	for (int i = 0; i < 6; i++)
		s.args[i] = ctx->args[i];
	if (bpf_map_update_elem(&STARTS, &tid, &s, BPF_ANY))
		lost(LOST_NO_STASH);
	if (*sel & SEL_ENTER_RECORD) {
		struct record rec = {};
		rec.start_ns = s.start_ns;
		rec.end_ns = s.start_ns;
		rec.tid = tid;
		rec.pid = pid_tgid >> 32;
		rec.nr = nr;
		rec.args[0] = s.args[0];
		rec.flags = REC_ENTER;
		if (bpf_ringbuf_output(&EVENTS, &rec, sizeof(rec), BPF_RB_NO_WAKEUP))
			lost(LOST_FULL);
	}
	charge_to(cost, tid, t0);
	return 0;
}

// Reads the string at `ptr` to `at` in the scratch's paths; its length, or -1.
static __always_inline long read_path(struct scratch *sc, __u32 at, __u64 ptr)
{
	if (!ptr)
		return -1;
	long n = bpf_probe_read_user_str(&sc->paths[at & (PATH_MAX - 1)], PATH_MAX, (void *)ptr);
	return n > 0 ? n - 1 : -1;
}

static __always_inline void submit(struct scratch *sc, __u32 len1, __u32 len2, __u32 len3)
{
	__u64 size = sizeof(struct record) + (len1 & (PATH_MAX - 1)) + (len2 & (PATH_MAX - 1)) +
		     (len3 <= VALUE_MAX ? len3 : 0);
	if (size > sizeof(struct scratch))
		size = sizeof(struct scratch);
	if (bpf_ringbuf_output(&EVENTS, sc, size, BPF_RB_NO_WAKEUP))
		lost(LOST_FULL);
}

// For a setxattr whose name (`len` bytes at `name`) is a POSIX ACL's,
// `system.posix_acl_access` or `_default`: its value read to `end` (after the strings), and
// its length; 0 for any other name, or a value empty, longer than VALUE_MAX or unreadable.
// The value is at the third argument, its size at the fourth; setxattrat's are in `struct
// xattr_args` (the record's data).
static __always_inline __u32 read_value(struct scratch *sc, __u32 name, __u32 len, __u32 end)
{
	const char acl[] = "system.posix_acl_";
	if (len != 23 && len != 24)
		return 0;
#pragma unroll
	for (int i = 0; i < (int)sizeof(acl) - 1; i++)
		if (sc->paths[(name + i) & (PATH_MAX - 1)] != acl[i])
			return 0;
	struct record *rec = &sc->rec;
	__u64 ptr = rec->args[2], size = rec->args[3];
	if (rec->flags & REC_DATA) {
		ptr = rec->data[0];
		size = (__u32)rec->data[1];
	}
	if (!ptr || size == 0 || size > VALUE_MAX)
		return 0;
	__u32 at = end & (2 * PATH_MAX - 1);
	if (bpf_probe_read_user(&sc->paths[at], size, (void *)ptr))
		return 0;
	return size;
}

// Task `tid` waited for its child `child`, which had ended: it goes on with the child's
// cost where that is more.
static __always_inline void waited(__u32 tid, __u32 child)
{
	__u64 *mine = bpf_map_lookup_elem(&COST, &tid);
	__u64 theirs = cost_of(child);
	if (mine && *mine < theirs)
		*mine = theirs;
	else if (!mine)
		bpf_map_update_elem(&COST, &tid, &theirs, BPF_NOEXIST);
}

// sys_exit's work for a task of the cgroup: the record of its call, if it is one to record.
static __always_inline void exit_record(struct sys_exit_ctx *ctx, __u32 tid, __u32 pid, __u64 end)
{
	struct stash *s = bpf_map_lookup_elem(&STARTS, &tid);
	if (!s)
		return;
	__u32 zero = 0;
	struct scratch *sc = bpf_map_lookup_elem(&SCRATCH, &zero);
	if (!sc) {
		bpf_map_delete_elem(&STARTS, &tid);
		return;
	}
	struct record *rec = &sc->rec;
	__u32 nr = s->nr;
	rec->start_ns = s->start_ns;
	rec->cost_ns = s->cost_ns;
#pragma unroll
	for (int i = 0; i < 6; i++)
		rec->args[i] = s->args[i];
	bpf_map_delete_elem(&STARTS, &tid);
	__u32 *selp = bpf_map_lookup_elem(&SELECT, &nr);
	if (!selp)
		return;
	__u32 sel = *selp;
	long ret = ctx->ret;
	if (sel & SEL_WAITS) {
		if (ret > 0)
			waited(tid, ret);
		return;
	}
	if (sel & SEL_NO_EXIT)
		return;
	__u64 *armed = config(CFG_ARMED);
	if (!armed)
		return;
	if (!*armed) {
		if (!(sel & SEL_EXEC) || ret != 0)
			return;
		*armed = 1;
		// The program's clock starts here: the held shell's calls cost it nothing.
		__u64 none = 0;
		bpf_map_update_elem(&COST, &tid, &none, BPF_ANY);
		rec->cost_ns = 0;
	}
	rec->end_ns = end;
	rec->tid = tid;
	rec->pid = pid;
	rec->nr = nr;
	rec->ret = ret;
	rec->flags = 0;
	rec->len1 = 0;
	rec->len2 = 0;
	rec->path_arg1 = 0;
	rec->path_arg2 = 0;
	__u32 len1 = 0, len2 = 0, paths = 0;
#pragma unroll
	for (int i = 0; i < 6; i++) {
		if (!(sel & (1u << i)))
			continue;
		if (paths == 0) {
			long n = read_path(sc, 0, rec->args[i]);
			rec->path_arg1 = i;
			if (n < 0) {
				rec->flags |= REC_PATH1_UNREAD;
			} else {
				len1 = n & (PATH_MAX - 1);
				rec->flags |= REC_PATH1;
			}
		} else if (paths == 1) {
			long n = read_path(sc, len1, rec->args[i]);
			rec->path_arg2 = i;
			if (n < 0) {
				rec->flags |= REC_PATH2_UNREAD;
			} else {
				len2 = n & (PATH_MAX - 1);
				rec->flags |= REC_PATH2;
			}
		}
		paths++;
	}
	rec->len1 = len1;
	rec->len2 = len2;
	rec->len3 = 0;
	__u32 data_arg = SEL_DATA_ARG(sel);
	if (data_arg >= 1 && data_arg <= 6) {
		__u32 idx = data_arg - 1;
		__u64 ptr = idx < 6 ? rec->args[idx] : 0;
		long r = -1;
		if (ptr && SEL_DATA_LEN(sel) == 24)
			r = bpf_probe_read_user(rec->data, 24, (void *)ptr);
		else if (ptr && SEL_DATA_LEN(sel) == 16)
			r = bpf_probe_read_user(rec->data, 16, (void *)ptr);
		else if (ptr)
			r = bpf_probe_read_user(rec->data, 8, (void *)ptr);
		rec->flags |= r == 0 ? REC_DATA : (ptr ? REC_DATA_UNREAD : 0);
	}
	__u32 len3 = 0;
	// The name is the second string, or the only one (fsetxattr's).
	if ((sel & SEL_VALUE) && (rec->flags & REC_PATH2))
		len3 = read_value(sc, len1, len2, len1 + len2);
	else if ((sel & SEL_VALUE) && paths == 1 && (rec->flags & REC_PATH1))
		len3 = read_value(sc, 0, len1, len1);
	if (len3) {
		rec->len3 = len3;
		rec->flags |= REC_VALUE;
	}
	submit(sc, len1, len2, len3);
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit(struct sys_exit_ctx *ctx)
{
	__u64 end = bpf_ktime_get_ns();
	if (!in_cgroup())
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	exit_record(ctx, tid, pid_tgid >> 32, end);
	charge(tid, end);
	return 0;
}

// A fork record for the child `child`, in its parent (before the child runs).
static __always_inline int fork_record(__u32 child)
{
	if (!in_cgroup())
		return 0;
	__u64 *armed = config(CFG_ARMED);
	if (!armed || !*armed)
		return 0;
	__u32 zero = 0;
	struct scratch *sc = bpf_map_lookup_elem(&SCRATCH, &zero);
	if (!sc)
		return 0;
	struct record *rec = &sc->rec;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	__u64 flags = 0;
	struct stash *s = bpf_map_lookup_elem(&STARTS, &tid);
	if (s) {
		__u32 nr = s->nr;
		__u64 arg = s->args[0];
		__u32 *sel = bpf_map_lookup_elem(&SELECT, &nr);
		if (sel && (*sel & SEL_FLAGS_ARG0))
			flags = arg;
		else if (sel && (*sel & SEL_FLAGS_STRUCT) && bpf_probe_read_user(&flags, 8, (void *)arg))
			flags = 0;
		else if (sel && (*sel & SEL_FLAGS_VFORK))
			flags = CLONE_VM_VFORK;
	}
	__u64 cost = cost_of(tid);
	bpf_map_update_elem(&COST, &child, &cost, BPF_ANY);
	__u64 now = bpf_ktime_get_ns();
	rec->start_ns = now;
	rec->cost_ns = cost;
	rec->end_ns = now;
	rec->tid = tid;
	rec->pid = pid_tgid >> 32;
	rec->nr = FORK_NR;
	rec->ret = child;
	rec->args[0] = flags;
	rec->flags = 0;
	rec->len1 = 0;
	rec->len2 = 0;
	submit(sc, 0, 0, 0);
	return 0;
}

// sched_process_fork since Linux 6.10 (`__data_loc` comms): the child's pid at 20. The
// kernel refuses to attach a program that reads past its event, so each layout has its own.
struct fork_ctx {
	__u64 common;
	__u32 parent_comm;
	__u32 parent_pid;
	__u32 child_comm;
	__u32 child_pid;
};

// Before (comms inline): at 44.
struct fork_ctx_before_6_10 {
	__u64 common;
	char parent_comm[16];
	__u32 parent_pid;
	char child_comm[16];
	__u32 child_pid;
};

SEC("tracepoint/sched/sched_process_fork")
int process_fork(struct fork_ctx *ctx)
{
	return fork_record(ctx->child_pid);
}

SEC("tracepoint/sched/sched_process_fork")
int process_fork_before_6_10(struct fork_ctx_before_6_10 *ctx)
{
	return fork_record(ctx->child_pid);
}

char LICENSE[] SEC("license") = "GPL";
