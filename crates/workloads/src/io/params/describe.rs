//! A job's description, as the run's header and report show it.

use super::{Distribution, IoParams, UNBOUNDED};
use fsbench_model::units::format_bytes;

impl IoParams {
    /// What the job does, in a line: its pattern, jobs, files, engine and how long it runs.
    pub(super) fn description(&self) -> String {
        if let Some(burn) = self.cpu_burn {
            return format!(
                "fio's cpuio: {} job(s) burning {}% of a CPU each for {} s: no I/O, no files",
                self.numjobs,
                burn.load,
                self.runtime_ms as f64 / 1000.0
            ) + &self.beside_described();
        }
        if let Some(exec) = &self.exec {
            let name = self.job.as_deref().unwrap_or("exec");
            return format!(
                "fio's exec: {} job(s) running `{}` for {} s: no I/O, no files",
                self.numjobs,
                exec.argv(self.runtime_ms / 1000, name).join(" "),
                self.runtime_ms as f64 / 1000.0
            ) + &self.beside_described();
        }
        let skew = match self.distribution {
            Distribution::Random => String::new(),
            d => format!(", {}", d.text()),
        };
        let checks = match self.verify_only {
            true => " read back by verify_only (nothing written)",
            false => "",
        };
        if self.on_kernel_device() {
            return format!(
                "fio-style {}: {} job(s) on the kernel's {} device, {} at depth {}, {}: no filesystem is measured",
                self.rw.name(),
                self.numjobs,
                self.filename[0],
                self.engine_described(),
                self.depth(),
                self.limit_described(false),
            ) + &self.beside_described();
        }
        // A fill job without a size: its files' size is the filesystem's, found when laid out.
        let unbounded = self.fill_device && self.size >= UNBOUNDED;
        format!(
            "fio-style {}{skew}{checks}: {} job(s){} × {} file(s) of {}, {} at depth {}, {}",
            self.rw.name(),
            self.numjobs,
            match self.numjobs {
                1 => String::new(),
                _ => format!(" as {}", self.workers.name()),
            },
            self.nrfiles,
            match (self.size_of_files || self.pool_sized(), unbounded) {
                (true, _) => "their size".to_string(),
                (false, true) => "no set size".to_string(),
                (false, false) => format_bytes(self.filesize),
            },
            self.engine_described(),
            self.depth(),
            self.limit_described(unbounded),
        ) + &(self.placement.describe()).map_or(String::new(), |placed| format!(", {placed}"))
            + &self.beside_described()
    }

    /// The engine's name, and what fio's name was where the job file named another spelling
    /// of it (`cpp_null`, fio's null engine built as a C++ plugin).
    fn engine_described(&self) -> String {
        let written = (self.fio.as_deref()).and_then(|fio| {
            let lines = fio.global.iter().chain(&fio.options);
            lines.rev().find(|(k, _)| k == "ioengine")
        });
        match written {
            Some((_, name)) if name == "cpp_null" => {
                "null (fio's cpp_null: its null engine as a C++ plugin)".to_string()
            }
            _ => self.engine.name().to_string(),
        }
    }

    /// How long the job runs: its time, its passes, or until the filesystem is full.
    fn limit_described(&self, unbounded: bool) -> String {
        if self.time_based {
            format!("for {} s", self.runtime_ms as f64 / 1000.0)
        } else if self.pool_sized() {
            format!("{} pass(es) of its pools", self.loops)
        } else if self.size_of_files {
            format!(
                "{} pass(es) of the files a group before it made",
                self.loops
            )
        } else if unbounded {
            "until the filesystem is full".to_string()
        } else if self.fill_device {
            format!(
                "until the filesystem is full (at most {})",
                format_bytes(self.size)
            )
        } else {
            format!("{} pass(es) of {}", self.loops, format_bytes(self.size))
        }
    }

    /// A pmemblk job without a size: its pools', found when they are made.
    fn pool_sized(&self) -> bool {
        self.engine == super::Engine::Pmemblk && self.size >= UNBOUNDED
    }

    /// How many jobs run beside this one, and the groups that run again before it.
    fn beside_described(&self) -> String {
        let beside = match self.beside.len() {
            0 => String::new(),
            n => format!("; {n} more job(s) at the same time"),
        };
        match self.earlier_groups.len() {
            0 => beside,
            n => beside + &format!("; after {n} earlier group(s) run again, untimed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::IoParams;
    use crate::WorkloadParams;

    #[test]
    fn a_fill_job_gives_no_size_it_lacks_and_a_verify_only_job_says_it_reads_back() {
        let described = |args: &str| IoParams::parse(args).unwrap().describe();
        let unbounded = described("rw=write,fill-device");
        assert!(
            unbounded.ends_with("of no set size, psync at depth 1, until the filesystem is full"),
            "{unbounded}"
        );
        assert!(!unbounded.contains("PiB"), "{unbounded}");
        let bounded = described("rw=write,fill-device,size=64m");
        assert!(
            bounded.ends_with("until the filesystem is full (at most 64.0 MiB)"),
            "{bounded}"
        );
        let mut checks = IoParams::parse("rw=write,size=1m,verify=md5").unwrap();
        checks.verify_only = true;
        let described = checks.describe();
        assert!(
            described.starts_with("fio-style write read back by verify_only (nothing written):"),
            "{described}"
        );
    }
}
