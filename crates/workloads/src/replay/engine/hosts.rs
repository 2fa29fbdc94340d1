//! Where a replay's traced threads run: as worker processes, each traced process wholly in
//! one worker process (its threads share nothing with another traced process's), at most
//! [`WORKERS_MAX`] worker processes and as many threads in all; as threads, one pool.

use super::WORKERS_MAX;

/// A worker process's share: the traced threads of the traced processes it hosts, and how
/// many threads it replays them on.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Host {
    pub(super) threads: Vec<u32>,
    pub(super) lanes: usize,
}

/// The worker processes for `processes` (each its traced threads): one a traced process up
/// to [`WORKERS_MAX`]; beyond, traced process `p` goes to worker `p mod WORKERS_MAX`. Each
/// runs one thread, and the threads left of [`WORKERS_MAX`] go one at a time to the worker
/// with the most traced threads per thread (none gets more threads than it has traced).
pub(super) fn hosts(processes: &[Vec<u32>]) -> Vec<Host> {
    let n = processes.len().min(WORKERS_MAX);
    let mut hosts: Vec<Host> = (0..n)
        .map(|_| Host {
            threads: Vec::new(),
            lanes: 1,
        })
        .collect();
    for (p, threads) in processes.iter().enumerate() {
        hosts[p % n].threads.extend_from_slice(threads);
    }
    for _ in n..WORKERS_MAX {
        let busiest = (hosts.iter_mut())
            .filter(|h| h.lanes < h.threads.len())
            .max_by(|a, b| (a.threads.len() * b.lanes).cmp(&(b.threads.len() * a.lanes)));
        match busiest {
            Some(host) => host.lanes += 1,
            None => break,
        }
    }
    hosts
}

/// `threads` spread over `lanes` worker threads: lane `j` replays threads `j`, `j + lanes`, …
pub(super) fn lanes(threads: &[u32], lanes: usize) -> Vec<Vec<u32>> {
    (0..lanes)
        .map(|j| threads.iter().skip(j).step_by(lanes).copied().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `counts[p]` traced threads for traced process `p`, numbered in order.
    fn processes(counts: &[u32]) -> Vec<Vec<u32>> {
        let mut next = 0;
        (counts.iter())
            .map(|&n| {
                next += n;
                (next - n..next).collect()
            })
            .collect()
    }

    #[test]
    fn each_traced_process_is_in_one_worker_and_threads_stay_bounded() {
        let few = hosts(&processes(&[1, 2, 1]));
        let lanes_of = |h: &[Host]| h.iter().map(|h| h.lanes).collect::<Vec<_>>();
        assert_eq!(lanes_of(&few), [1, 2, 1]);
        assert_eq!(few[1].threads, [1, 2]);
        // One process of 40 threads: one worker, 16 threads.
        let one = hosts(&processes(&[40]));
        assert_eq!((one.len(), one[0].lanes), (1, WORKERS_MAX));
        assert_eq!(one[0].threads.len(), 40);
        // 20 processes: 16 workers, the first 4 hosting two processes each.
        let many = hosts(&processes(&[1; 20]));
        assert_eq!(many.len(), WORKERS_MAX);
        assert_eq!(many[0].threads, [0, 16]);
        assert_eq!(many[4].threads, [4]);
        assert!(many.iter().all(|h| h.lanes == 1));
        // A large process and a small one share the 16 threads by their traced threads.
        let uneven = hosts(&processes(&[30, 2]));
        let total: usize = uneven.iter().map(|h| h.lanes).sum();
        assert_eq!(total, WORKERS_MAX);
        assert!(uneven[0].lanes >= 14 && uneven[1].lanes <= 2, "{uneven:?}");
        assert!(hosts(&[]).is_empty());
    }

    #[test]
    fn lanes_take_every_thread_once() {
        assert_eq!(lanes(&[5, 6, 7, 8, 9], 2), [vec![5, 7, 9], vec![6, 8]]);
        assert_eq!(lanes(&[5], 1), [vec![5]]);
        assert!(lanes(&[], 0).is_empty());
    }
}
