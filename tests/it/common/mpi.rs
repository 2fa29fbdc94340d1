//! Helpers of the MPI tests: a tmpfs target of the test's own, `mpirun -np N fsbench run`,
//! the figures of a JSON document.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::MutexGuard;
use std::time::Duration;

use super::*;

/// The longest an MPI run of these tests may take (a few seconds each here).
pub const LIMIT: Duration = Duration::from_secs(180);
pub const TREE: &str = "tree:dirs=3,files=20,levels=2,stat,read";
pub const TREE_DIRS: f64 = 13.0;
pub const TREE_FILES: f64 = 260.0;

/// A tmpfs of the test's own as the shared target, unmounted at the end.
pub struct Target {
    pub dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl Target {
    pub fn new() -> Target {
        Target::sized("4G")
    }

    /// A target of `size` (tmpfs's `size=`).
    pub fn sized(size: &str) -> Target {
        let parent = tempdir();
        let dir = parent.path().join("shared");
        std::fs::create_dir(&dir).unwrap();
        let mounted = status(
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
                .arg(&dir),
        );
        assert!(
            mounted.success(),
            "cannot mount a tmpfs on {}",
            dir.display()
        );
        Target {
            dir,
            _parent: parent,
        }
    }

    pub fn entries(&self) -> Vec<String> {
        std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "results.db")
            .collect()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = output_within(Command::new("umount").arg(&self.dir), limit());
    }
}

/// `None` (the test said SKIPPED) without `mpirun` or one of `tools`; else the lock that runs
/// MPI tests one at a time, held for the test.
pub fn mpi_test(test: &str, tools: &[&str]) -> Option<MutexGuard<'static, ()>> {
    let needs: Vec<&str> = std::iter::once("mpirun")
        .chain(tools.iter().copied())
        .collect();
    can_run(test, &needs).then(super::machine_wide)
}

/// `mpirun -np N` of `wrapper` (a shell script given `$@` = fsbench and its arguments; `""`
/// for none) running `fsbench run -q --output-format json --dir TARGET ARGS`.
pub fn mpirun(np: u32, state: &Path, target: &Target, wrapper: &str, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("FSBENCH_STATE_DIR", state)
        .env("XDG_DATA_HOME", test_data_home())
        .args(["--oversubscribe", "-np", &np.to_string()]);
    if !wrapper.is_empty() {
        c.args(["sh", "-c", wrapper, "sh"]);
    }
    c.arg(env!("CARGO_BIN_EXE_fsbench"))
        .arg("--db")
        .arg(target.dir.join("results.db"))
        .args([
            "run",
            "-q",
            "--output-format",
            "json",
            "--no-drop-caches",
            "--runs",
            "1",
        ])
        .arg("--dir")
        .arg(&target.dir)
        .args(args);
    c
}

/// The value of figure `name` at `rank` (or without a rank) in a phase of the JSON document.
pub fn figure(phase: &serde_json::Value, name: &str, rank: Option<u64>) -> f64 {
    phase["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["name"] == name
                && match rank {
                    Some(r) => f["dims"][0]["name"] == "rank" && f["dims"][0]["count"] == r,
                    None => f.get("dims").is_none(),
                }
        })
        .unwrap_or_else(|| panic!("no figure {name} at rank {rank:?} in {}", phase["name"]))["value"]
        .as_f64()
        .unwrap()
}

pub fn succeeded(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "mpirun failed: {}", text(&out.stderr));
    json(out)
}
