use std::os::fd::{AsFd, AsRawFd};
use std::sync::mpsc;
use std::time::Instant;

use rustix::fs::{Mode, OFlags};

use super::*;

/// A recorder for a phase of these tests, and its progress.
fn phase() -> (PhaseRecorder, Arc<Progress>) {
    let progress = Arc::new(Progress::default());
    (PhaseRecorder::start("p", progress.clone()), progress)
}

/// A scratch directory and a descriptor of it.
fn scratch_dir() -> (tempfile::TempDir, rustix::fd::OwnedFd) {
    let scratch = tempfile::tempdir().unwrap();
    let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
    let dir = rustix::fs::open(scratch.path(), flags, Mode::empty()).unwrap();
    (scratch, dir)
}

const MODES: [WorkerMode; 2] = [WorkerMode::Processes, WorkerMode::Threads];

#[test]
fn every_workers_figures_and_outcome_arrive() {
    for mode in MODES {
        let (mut rec, progress) = phase();
        let inputs: Vec<u64> = (1..=4).map(|i| i * 1000).collect();
        let ran = Crew::new(mode, &[])
            .run(&mut rec, inputs, |w, units| {
                w.start()?;
                for _ in 0..units {
                    w.rec().unit_done(10)?;
                }
                Ok((w.index(), units))
            })
            .unwrap();
        let outcomes: Vec<(usize, u64)> = ran.outcomes.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            outcomes,
            [(0, 1000), (1, 2000), (2, 3000), (3, 4000)],
            "{mode:?}"
        );
        assert!(ran.to >= ran.from);
        assert_eq!(progress.done.load(Ordering::Relaxed), 10_000, "{mode:?}");
        assert_eq!(progress.threads().0, 4, "{mode:?}");
        let m = rec.finish();
        assert_eq!((m.ops, m.bytes), (10_000, 100_000), "{mode:?}");
    }
}

#[test]
fn one_worker_runs_in_the_phases_process_with_a_table_of_its_own() {
    let (scratch, dir) = scratch_dir();
    let other = rustix::fs::open(scratch.path(), OFlags::RDONLY, Mode::empty()).unwrap();
    let keep = [dir.as_fd()];
    for mode in MODES {
        let (mut rec, progress) = phase();
        let me = std::thread::current().id();
        let ran = Crew::new(mode, &keep)
            .run(&mut rec, vec![7u64], |w, units| {
                for _ in 0..units {
                    w.rec().unit_done(1)?;
                }
                // Counted in the phase's progress as it goes.
                let seen = progress.done.load(Ordering::Relaxed);
                w.start()?;
                // SAFETY: only asks whether the number is open here.
                let other_open =
                    rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(other.as_raw_fd()) })
                        .is_ok();
                // Left open at a number the phase's thread does not use: closed with the
                // worker's table, never in the phase's.
                let left = rustix::io::fcntl_dupfd_cloexec(keep[0], 900).unwrap();
                std::mem::forget(left);
                let thread = std::thread::current().id() != me;
                Ok((std::process::id(), thread, other_open, seen))
            })
            .unwrap();
        let values = ran.values().unwrap();
        assert_eq!(values, [(std::process::id(), true, false, 7)], "{mode:?}");
        assert_eq!(rec.units(), 7);
        // SAFETY: only asks whether the number is open here.
        let left = rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(900) });
        assert!(
            left.is_err(),
            "{mode:?}: the worker's descriptor is in the phase's table"
        );
    }
}

#[test]
fn workers_start_together_after_getting_ready() {
    for mode in MODES {
        let (mut rec, _) = phase();
        let ready_at = Instant::now();
        let ran = Crew::new(mode, &[])
            .run(&mut rec, vec![0u64, 300], |w, wait_ms| {
                // One worker takes its time getting ready; the other waits for it.
                std::thread::sleep(Duration::from_millis(wait_ms));
                w.start()?;
                Ok(ready_at.elapsed().as_millis() as u64)
            })
            .unwrap();
        let started: Vec<u64> = ran.outcomes.into_iter().map(Result::unwrap).collect();
        assert!(started.iter().all(|ms| *ms >= 300), "{mode:?}: {started:?}");
        assert!(
            ran.from >= ready_at + Duration::from_millis(300),
            "{mode:?}"
        );
    }
}

#[test]
fn a_workers_error_is_its_own_outcome() {
    for mode in MODES {
        let (mut rec, _) = phase();
        let ran = Crew::new(mode, &[])
            .run(&mut rec, vec![false, true], |w, fails| {
                if fails {
                    // Before its start: the other one is not kept waiting.
                    return Err(FsbenchError::DiskFull {
                        phase: "p".into(),
                        ops: 3,
                        errno: "ENOSPC".into(),
                        remedy: "",
                    });
                }
                w.start()?;
                w.rec().unit_done(0)?;
                Ok(())
            })
            .unwrap();
        assert!(ran.outcomes[0].is_ok(), "{mode:?}");
        let e = ran.values().err().unwrap();
        assert!(
            matches!(e, FsbenchError::DiskFull { ops: 3, .. }),
            "{mode:?}: {e}"
        );
        assert_eq!(rec.units(), 1, "{mode:?}");
    }
}

#[test]
fn folded_values_arrive_in_the_workers_order_and_a_failed_one_is_not_folded() {
    for mode in MODES {
        let (mut rec, _) = phase();
        let mut folded = Vec::new();
        let ran = Crew::new(mode, &[])
            .run_folding(
                &mut rec,
                vec![3u64, 0, 5, 1],
                |w, units| {
                    w.start()?;
                    if units == 0 {
                        return Err(FsbenchError::Failed("no units".into()));
                    }
                    // The later workers end first: the order is the workers', not the ends'.
                    std::thread::sleep(Duration::from_millis(50 / units));
                    Ok(vec![units; units as usize])
                },
                |index, value| folded.push((index, value)),
            )
            .unwrap();
        let expected = [(0, vec![3; 3]), (2, vec![5; 5]), (3, vec![1])];
        assert_eq!(folded, expected, "{mode:?}");
        let failed: Vec<bool> = ran.outcomes.iter().map(Result::is_err).collect();
        assert_eq!(failed, [false, true, false, false], "{mode:?}");
    }
}

/// Whether process `pid` is gone (or a zombie nobody reaped).
fn gone(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rfind(')')
        .is_none_or(|close| stat[close + 2..].starts_with('Z'))
}

#[test]
fn a_worker_process_that_dies_fails_the_phase_and_stops_the_others() {
    let (mut rec, _) = phase();
    let pids: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
    let region = shm::Region::new(shm::Region::room::<AtomicU64>(3)).unwrap();
    let shared_pids = region.take::<AtomicU64>(3);
    let started = Instant::now();
    let failed = Crew::new(WorkerMode::Processes, &[])
        .run(&mut rec, vec![0, 1, 2], |w, i| {
            shared_pids[i].store(u64::from(std::process::id()), Ordering::Relaxed);
            w.start()?;
            if i == 1 {
                std::thread::sleep(Duration::from_millis(100));
                // SAFETY: ends this worker process only.
                unsafe { libc::raise(libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        })
        .err()
        .unwrap()
        .to_string();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(failed.contains("worker process 2 of 3"), "{failed}");
    assert!(failed.contains("killed by signal 9 (SIGKILL)"), "{failed}");
    for (p, shared) in pids.iter().zip(shared_pids) {
        p.store(shared.load(Ordering::Relaxed), Ordering::Relaxed);
        let pid = p.load(Ordering::Relaxed) as i32;
        assert!(pid > 0 && gone(pid), "worker {pid} left running");
    }
}

#[test]
fn an_interrupt_stops_worker_processes() {
    let (mut rec, progress) = phase();
    let cancel = progress.cancel.clone();
    let outcome = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            cancel.store(true, Ordering::Relaxed);
        });
        Crew::new(WorkerMode::Processes, &[]).run(&mut rec, vec![(); 2], |w, ()| {
            w.start()?;
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        })
    });
    assert!(matches!(outcome, Err(FsbenchError::Interrupted)));
}

#[test]
fn a_worker_process_keeps_only_its_directories() {
    let (scratch, dir) = scratch_dir();
    let other = rustix::fs::open(
        scratch.path().join("other"),
        OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from(0o600),
    )
    .unwrap();
    let (mut rec, _) = phase();
    let keep = [dir.as_fd()];
    let ran = Crew::new(WorkerMode::Processes, &keep)
        .run(&mut rec, vec![other.as_raw_fd(); 2], |w, other| {
            w.start()?;
            // SAFETY: only asks whether the number is open here.
            let other_open =
                rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(other) }).is_ok();
            let name = format!("made.{}", w.index());
            let made = rustix::fs::openat(keep[0], &name, OFlags::CREATE, Mode::empty());
            Ok((other_open, made.is_ok()))
        })
        .unwrap();
    assert_eq!(ran.values().unwrap(), [(false, true); 2]);
    assert!(scratch.path().join("made.1").exists());
}

/// Entries of the calling thread's descriptor table (the listing's own descriptor included).
fn own_table() -> Vec<String> {
    std::fs::read_dir("/proc/thread-self/fd")
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

fn target_of(fd: i32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/thread-self/fd/{fd}")).ok()
}

#[test]
fn a_workers_descriptors_are_its_own_and_closed_before_it_ends() {
    let scratch = tempfile::tempdir().unwrap();
    let open = |path: &std::path::Path, flags| {
        rustix::fs::open(path, flags | OFlags::CLOEXEC, Mode::from(0o600)).unwrap()
    };
    let kept = open(scratch.path(), OFlags::DIRECTORY | OFlags::RDONLY);
    let other = open(
        &scratch.path().join("other"),
        OFlags::CREATE | OFlags::WRONLY,
    );
    let (opened, seen) = mpsc::channel();
    let (checked, check) = mpsc::channel::<()>();
    let worker_file = scratch.path().join("worker");
    let left_after = std::thread::scope(|s| {
        let (kept, other) = (kept.as_fd(), other.as_raw_fd());
        let worker = s.spawn(move || {
            with_private_fds(&[kept], || {
                // The other copy was closed; the kept directory is at its number.
                // SAFETY: only asks whether the number is open in this table.
                let other_gone = rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(other) });
                let file = rustix::fs::openat(kept, "worker", OFlags::CREATE, Mode::empty());
                let file = file.unwrap();
                opened.send(file.as_raw_fd()).unwrap();
                check.recv().unwrap();
                other_gone
            })
            .map(|other_gone| (other_gone, own_table()))
        });
        // The worker's file is open in its table, not in the process's.
        let fd = seen.recv().unwrap();
        assert_ne!(target_of(fd), Some(worker_file.clone()));
        checked.send(()).unwrap();
        worker.join().unwrap().unwrap()
    });
    assert_eq!(left_after.0, Err(rustix::io::Errno::BADF));
    // Only the listing's own descriptor was left in the worker's table once `work` ended.
    assert_eq!(left_after.1.len(), 1, "{:?}", left_after.1);
    // The process's copies are untouched.
    assert_eq!(
        target_of(other.as_raw_fd()),
        Some(scratch.path().join("other"))
    );
    assert!(rustix::io::fcntl_getfd(&kept).is_ok());
}

#[test]
fn a_crew_wakes_its_phase_thread_when_the_last_worker_ends() {
    let (count, progress) = (AtomicU64::new(0), Progress::default());
    let crew = ThreadCrew::new(vec![&count, &count], &progress);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| s.spawn(|| crew.work(&[], || ()).unwrap()))
            .collect();
        // Joined one by one, without parking (the scope's end parks, and would take the
        // wake-up).
        for w in workers {
            w.join().unwrap();
        }
    });
    // The last worker left the phase thread a wake-up: this returns at once.
    let parked = Instant::now();
    std::thread::park_timeout(Duration::from_secs(10));
    assert!(parked.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_panicking_worker_still_counts_out() {
    let (count, progress) = (AtomicU64::new(7), Progress::default());
    let crew = ThreadCrew::new(vec![&count], &progress);
    std::thread::scope(|s| {
        let h = s.spawn(|| crew.work(&[], || panic!("worker fails")));
        crew.wait(std::slice::from_ref(&h));
        assert!(h.join().is_err());
    });
    assert_eq!(crew.left.load(Ordering::Relaxed), 0);
    // Its first-done carries the units done then, not the last poll's.
    assert_eq!(progress.threads().1.map(|(_, units)| units), Some(7));
}

#[test]
fn join_all_keeps_order_and_names_a_panic() {
    let outcomes = std::thread::scope(|s| {
        let handles = vec![
            s.spawn(|| Ok(1)),
            s.spawn(|| panic!("worker fails")),
            s.spawn(|| Err(FsbenchError::Failed("its own".into()))),
        ];
        join_all(handles, "a test thread panicked")
    });
    let texts: Vec<String> = (outcomes.iter())
        .map(|o| match o {
            Ok(n) => n.to_string(),
            Err(e) => e.to_string(),
        })
        .collect();
    assert_eq!(texts[0], "1");
    assert!(texts[1].contains("a test thread panicked"), "{texts:?}");
    assert!(texts[2].contains("its own"), "{texts:?}");
}
