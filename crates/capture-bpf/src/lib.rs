//! The bpf tracer of `fsbench capture`: a BPF program (`capture.bpf.c`) records the system
//! calls of one cgroup's tasks into a ring buffer without stopping them, and this loader
//! drains the buffer in batches on a thread of its own into a file of records, which
//! [`Records`] reads back. Nothing is pinned: the programs, their links and maps go with
//! this process's descriptors, however it ends.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use aya::maps::{Array, MapData, PerCpuArray, RingBuf};
use aya::programs::TracePoint;
use aya::programs::trace_point::TracePointLink;
use aya::{Ebpf, EbpfLoader};

mod record;
mod syscalls;

pub use fsbench_model::syscall::SyscallRecord;
pub use record::{Event, Records};

/// The BPF object, empty when it was built without clang (`FSBENCH_BPF_UNBUILT` says why).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/capture.bpf.o"));

/// The ring buffer's size unless told otherwise: room for about 200,000 calls between two
/// drains.
pub const BUFFER_DEFAULT_MIB: u32 = 64;

/// How often the loader drains the ring buffer.
const DRAIN_EVERY: Duration = Duration::from_millis(5);

/// The programs and the tracepoints they attach to; the fork's, one of two (below).
const PROGRAMS: [(&str, &str, &str); 2] = [
    ("sys_enter", "raw_syscalls", "sys_enter"),
    ("sys_exit", "raw_syscalls", "sys_exit"),
];

/// `sched_process_fork`'s program for the child's pid at each offset it has had.
const FORK_PROGRAMS: [(u64, &str); 2] = [(20, "process_fork"), (44, "process_fork_before_6_10")];

/// CONFIG's slots (see `capture.bpf.c`): the cgroup's id, and what a system call costs
/// outside the programs once they are attached.
const CFG_CGROUP: u32 = 0;
const CFG_DISPATCH_NS: u32 = 2;

/// Calls in each of [`dispatch_ns`]'s timed loops, and how many loops each way.
const CALIBRATION_CALLS: u32 = 20_000;
const CALIBRATION_LOOPS: usize = 3;

/// The BPF programs loaded into the kernel (verified), not attached yet.
pub struct Loaded {
    ebpf: Ebpf,
    fork_program: &'static str,
}

/// The loaded programs, each with its tracepoint.
fn programs(fork_program: &'static str) -> [(&'static str, &'static str, &'static str); 3] {
    let [enter, exit] = PROGRAMS;
    [enter, exit, (fork_program, "sched", "sched_process_fork")]
}

/// Loads the BPF programs with a ring buffer of `buffer_mib` MiB (a power of two): why
/// the bpf tracer cannot run here when it cannot.
pub fn load(buffer_mib: u32) -> Result<Loaded, String> {
    let unbuilt = env!("FSBENCH_BPF_UNBUILT");
    if !unbuilt.is_empty() {
        return Err(unbuilt.to_string());
    }
    if syscalls::table().is_empty() {
        return Err(format!(
            "its table of system calls is written for x86_64, not {}",
            std::env::consts::ARCH
        ));
    }
    check_buffer(buffer_mib)?;
    let offset = child_pid_offset()?;
    let fork_program = (FORK_PROGRAMS.iter())
        .find(|(at, _)| *at == offset)
        .map(|(_, name)| *name)
        .ok_or_else(|| {
            format!(
                "sched_process_fork has its child_pid at offset {offset}, a layout its BPF \
                 program does not know"
            )
        })?;
    let mut ebpf = EbpfLoader::new()
        .map_max_entries("EVENTS", buffer_mib << 20)
        .load(OBJECT)
        .map_err(|e| format!("the kernel refused its BPF object: {}", chain(&e)))?;
    for (name, _, _) in programs(fork_program) {
        let program: &mut TracePoint = (ebpf.program_mut(name))
            .ok_or_else(|| format!("its BPF object has no program {name}"))?
            .try_into()
            .map_err(|e| format!("{name}: {}", chain(&e)))?;
        program.load().map_err(|e| {
            format!(
                "the kernel refused its program {name} (root, or CAP_BPF and CAP_PERFMON, \
                 is needed): {}",
                chain(&e)
            )
        })?;
    }
    Ok(Loaded { ebpf, fork_program })
}

/// Why `mib` MiB is no size for the ring buffer (a power of two, at most 2 GiB), if it is not.
pub fn check_buffer(mib: u32) -> Result<(), String> {
    if mib.is_power_of_two() && mib <= 2048 {
        Ok(())
    } else {
        Err(format!(
            "--bpf-buffer {mib}: the ring buffer's size is a power of two of MiB, at most 2048"
        ))
    }
}

/// Where `sched_process_fork` has the child's pid: its format file says (Linux 6.10 moved
/// it).
fn child_pid_offset() -> Result<u64, String> {
    let dirs = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
    let format = dirs
        .iter()
        .find_map(|d| {
            std::fs::read_to_string(format!("{d}/events/sched/sched_process_fork/format")).ok()
        })
        .ok_or("the kernel's tracefs (sched_process_fork's format) cannot be read")?;
    let offset = format
        .lines()
        .find(|l| l.contains(" child_pid;"))
        .and_then(|l| l.split("offset:").nth(1))
        .and_then(|r| r.split(';').next())
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or("sched_process_fork's format names no child_pid")?;
    Ok(offset)
}

/// An error with its causes, the verifier's log (which aya puts in the message) left out:
/// the first line says why.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    match text.split_once(". Verifier output:") {
        Some((why, log)) => {
            let last = log
                .lines()
                .rev()
                .find(|l| l.contains("disallowed") || l.contains("invalid"));
            format!(
                "{why}{}",
                last.map(|l| format!(" ({})", l.trim())).unwrap_or_default()
            )
        }
        None => text,
    }
}

impl Loaded {
    /// Starts recording the calls of the tasks of the cgroup with id `cgroup` (its
    /// directory's inode) from their first successful exec on, into the file `out`.
    pub fn attach(mut self, cgroup: u64, out: &Path) -> Result<Running, String> {
        let file = File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
        let mut select: Array<&mut MapData, u32> = (self.ebpf.map_mut("SELECT"))
            .ok_or("no SELECT map")?
            .try_into()
            .map_err(|e| chain(&e))?;
        for call in syscalls::table() {
            (select.set(call.nr as u32, call.select, 0)).map_err(|e| chain(&e))?;
        }
        set_config(&mut self.ebpf, CFG_CGROUP, cgroup)?;
        let detached = fastest_call_ns();
        let mut links = Links(Vec::new());
        for (name, category, event) in programs(self.fork_program) {
            let program: &mut TracePoint = (self.ebpf.program_mut(name))
                .ok_or("no program")?
                .try_into()
                .map_err(|e| chain(&e))?;
            let link = (program.attach(category, event))
                .and_then(|id| program.take_link(id))
                .map_err(|e| format!("cannot attach to {category}:{event}: {}", chain(&e)))?;
            links.0.push(link);
        }
        let dispatch = fastest_call_ns().saturating_sub(detached);
        set_config(&mut self.ebpf, CFG_DISPATCH_NS, dispatch)?;
        let events = self.ebpf.take_map("EVENTS").ok_or("no EVENTS map")?;
        let ring = RingBuf::try_from(events).map_err(|e| chain(&e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let drain = std::thread::Builder::new()
            .name("bpf-drain".into())
            .spawn(move || drain(ring, BufWriter::with_capacity(1 << 20, file), &stopping))
            .map_err(|e| format!("cannot start the thread that drains the ring buffer: {e}"))?;
        Ok(Running {
            links: Some(links),
            ebpf: self.ebpf,
            stop,
            drain: Some(drain),
        })
    }
}

/// Sets slot `slot` of the programs' CONFIG map.
fn set_config(ebpf: &mut Ebpf, slot: u32, value: u64) -> Result<(), String> {
    let mut config: Array<&mut MapData, u64> = (ebpf.map_mut("CONFIG"))
        .ok_or("no CONFIG map")?
        .try_into()
        .map_err(|e| chain(&e))?;
    config.set(slot, value, 0).map_err(|e| chain(&e))
}

/// A system call's time in ns, the fastest of a few timed loops of `getppid` (a call the
/// programs do not record, made by this process, outside the cgroup): with the programs
/// attached, less without, what every system call costs that the programs' own clock does
/// not see (the kernel's slower path into a traced call, the programs' dispatch).
fn fastest_call_ns() -> u64 {
    (0..CALIBRATION_LOOPS)
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..CALIBRATION_CALLS {
                // SAFETY: getppid has no arguments and cannot fail.
                unsafe { libc::getppid() };
            }
            start.elapsed().as_nanos() as u64 / u64::from(CALIBRATION_CALLS)
        })
        .min()
        .unwrap_or(0)
}

/// Writes each record the ring buffer holds to `out`, length first, every [`DRAIN_EVERY`]
/// until told to stop (and then what is left): how many.
fn drain(
    mut ring: RingBuf<MapData>,
    mut out: BufWriter<File>,
    stop: &AtomicBool,
) -> std::io::Result<u64> {
    let mut records = 0;
    loop {
        let last = stop.load(Ordering::Acquire);
        while let Some(item) = ring.next() {
            out.write_all(&(item.len() as u32).to_le_bytes())?;
            out.write_all(&item)?;
            records += 1;
        }
        if last {
            break;
        }
        std::thread::sleep(DRAIN_EVERY);
    }
    out.flush()?;
    Ok(records)
}

/// The programs attached and the buffer drained: stopped by [`Running::finish`], or by drop
/// on an error or a panic.
pub struct Running {
    /// Detached before the programs and maps go (fields drop in order), or by
    /// [`Running::finish`]'s [`Detaching`].
    links: Option<Links>,
    ebpf: Ebpf,
    stop: Arc<AtomicBool>,
    drain: Option<JoinHandle<std::io::Result<u64>>>,
}

/// What a capture recorded and lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    pub records: u64,
    /// Records the ring buffer had no room for.
    pub lost_full: u64,
    /// Calls whose start could not be kept (more tasks in calls at once than its map holds).
    pub lost_unstarted: u64,
}

impl Running {
    /// Stops recording once the program has ended: every record it made is in the file.
    /// The links are detached meanwhile, on a thread of their own ([`Detaching`]), so that
    /// the kernel's wait overlaps what the caller does next (parsing the records).
    pub fn finish(mut self) -> Result<(Finished, Detaching), String> {
        let links = self.links.take();
        let detaching = Detaching(
            std::thread::Builder::new()
                .name("bpf-detach".into())
                .spawn(move || drop(links))
                .ok(),
        );
        self.stop.store(true, Ordering::Release);
        let drain = self.drain.take().ok_or("drained twice")?;
        let records = match drain.join() {
            Ok(r) => r.map_err(|e| format!("writing the records: {e}"))?,
            Err(_) => return Err("the thread that drains the ring buffer panicked".into()),
        };
        let lost: PerCpuArray<&MapData, u64> = (self.ebpf.map("LOST"))
            .ok_or("no LOST map")?
            .try_into()
            .map_err(|e| chain(&e))?;
        let sum = |slot: u32| {
            lost.get(&slot, 0)
                .map(|v| v.iter().sum::<u64>())
                .map_err(|e| chain(&e))
        };
        let finished = Finished {
            records,
            lost_full: sum(0)?,
            lost_unstarted: sum(1)?,
        };
        Ok((finished, detaching))
    }
}

/// The programs being detached after a capture: dropped, it waits until they are (a thread
/// that could not start left them detached already, where it was dropped).
pub struct Detaching(Option<JoinHandle<()>>);

impl Drop for Detaching {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(drain) = self.drain.take() {
            let _ = drain.join();
        }
    }
}

/// The programs' attachments. Each detach waits for the kernel's grace periods (about 90 ms
/// here, 0.27 s for three one after the other, most of a short capture's time): they are
/// detached at once, each on a thread of its own, so that the waits overlap.
struct Links(Vec<TracePointLink>);

impl Drop for Links {
    fn drop(&mut self) {
        std::thread::scope(|s| {
            for link in self.0.drain(..) {
                // A thread that cannot start leaves its link to be dropped here.
                let _ = std::thread::Builder::new().spawn_scoped(s, move || drop(link));
            }
        });
    }
}

/// Reads the records file at `path`.
pub fn records(path: &Path) -> std::io::Result<Records<impl Read>> {
    let file = File::open(path)?;
    Ok(Records::new(std::io::BufReader::with_capacity(
        1 << 20,
        file,
    )))
}
