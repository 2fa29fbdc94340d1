//! One filesystem configuration: a filesystem and how it is made, mounted and prepared.

use serde::{Deserialize, Serialize};

use crate::filesystem::{Capability, FsType, UserDriver};

/// One filesystem configuration: a filesystem and how it is made and mounted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FsConfig {
    pub label: String,
    /// `None` for an existing directory (`--dir`): no mkfs, no mount.
    pub fs: Option<FsType>,
    /// Extra mkfs arguments, after fsbench's defaults.
    pub mkfs: Vec<String>,
    /// Mount options as requested (what the kernel applied is recorded per run).
    pub mount: String,
    /// Aging profile (`light`, `geriatrix-like`, a TOML file) run before the phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age: Option<String>,
    /// Percent of the space filled before the phases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<u8>,
    /// The I/O scheduler set on the device's queue for each run (`bfq`, `mq-deadline`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched: Option<String>,
    /// The device's write cache for each run (`wcache=on|off`: sysfs `queue/write_cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wcache: Option<bool>,
    /// Background load during each run's phases (`cpu:2+io:1`; see testbed::background).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    /// For `fs = "user"`: the suite file's driver, kept with the results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<UserDriver>,
    /// Crash states to check (`crash=N`): one more run of each workload, recorded under the
    /// filesystem, whose crash states are checked; its time is not among the speed figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<u32>,
}

impl FsConfig {
    /// A configuration of `fs`, labelled `label` or by what it is (`ext4 -O ^has_journal`).
    pub fn new(fs: FsType, mkfs: Vec<String>, mount: String, label: Option<String>) -> FsConfig {
        let label = label.unwrap_or_else(|| {
            let mut parts = vec![fs.name().to_string()];
            match fs {
                FsType::Zfs if !mkfs.is_empty() => parts.push(format!("pool={}", mkfs.join(","))),
                _ if !mkfs.is_empty() => parts.push(mkfs.join(" ")),
                _ => {}
            }
            match fs {
                FsType::Zfs if !mount.is_empty() => parts.push(format!("dataset={mount}")),
                _ if !mount.is_empty() => parts.push(format!("-o {mount}")),
                _ => {}
            }
            parts.join(" ")
        });
        FsConfig::plain(label, Some(fs), mkfs, mount)
    }

    /// The configuration `--fs NAME` makes of the built-in filesystem `name`: a fixture for
    /// the tests of what consumes results, as [`SuiteResult::for_tests`] is.
    ///
    /// [`SuiteResult::for_tests`]: crate::results::SuiteResult::for_tests
    #[doc(hidden)]
    pub fn for_tests(name: &str) -> FsConfig {
        let fs = FsType::BUILT_IN.into_iter().find(|f| f.name() == name);
        FsConfig::new(
            fs.expect("a built-in filesystem"),
            Vec::new(),
            String::new(),
            None,
        )
    }

    /// A configuration of `fs` with `mkfs` and `mount` and nothing else (no aging, fill,
    /// scheduler, write cache, background load or user driver).
    pub fn plain(label: String, fs: Option<FsType>, mkfs: Vec<String>, mount: String) -> FsConfig {
        FsConfig {
            label,
            fs,
            mkfs,
            mount,
            age: None,
            fill: None,
            sched: None,
            wcache: None,
            background: None,
            driver: None,
            crash: None,
        }
    }

    /// What its driver is declared to lack (a user driver's flags; built-ins are probed).
    pub fn lacks(&self) -> Vec<Capability> {
        self.driver
            .as_ref()
            .map_or_else(Vec::new, UserDriver::lacks)
    }

    /// Makes this a configuration of user driver `driver`; a label fsbench made names it.
    pub fn set_driver(&mut self, driver: UserDriver, labelled: bool) {
        if !labelled {
            self.label = self.label.replacen(FsType::User.name(), &driver.name, 1);
        }
        self.driver = Some(driver);
    }

    /// Sets the I/O scheduler; a label fsbench made says it.
    pub fn scheduled(&mut self, sched: Option<String>, labelled: bool) {
        if let (Some(s), false) = (&sched, labelled) {
            self.label.push_str(&format!(" sched={s}"));
        }
        self.sched = sched;
    }

    /// Sets the write cache (`wcache=on|off`); a label fsbench made says it.
    pub fn cached(&mut self, on: Option<bool>, labelled: bool) {
        if let (Some(on), false) = (on, labelled) {
            self.label
                .push_str(if on { " wcache=on" } else { " wcache=off" });
        }
        self.wcache = on;
    }

    /// Sets the background load, a checked `none`, `cpu:N`, `io:N` or `cpu:N+io:M` (`none`
    /// runs without one but says so in the label, beside the loaded configurations of
    /// `--background none,cpu:2`); a label fsbench made says it.
    pub fn loaded(&mut self, load: Option<String>, labelled: bool) {
        let Some(text) = load else { return };
        if !labelled {
            self.label.push_str(&format!(" bg={text}"));
        }
        self.background = (text != "none").then_some(text);
    }

    /// Sets the aging profile and fill level; a label fsbench made says them, so that an aged
    /// and a fresh configuration of one filesystem are told apart.
    pub fn prepared(&mut self, age: Option<String>, fill: Option<u8>, labelled: bool) {
        if !labelled {
            if let Some(a) = &age {
                self.label.push_str(&format!(" age={a}"));
            }
            if let Some(f) = fill {
                self.label.push_str(&format!(" @ {f}%"));
            }
        }
        self.age = age;
        self.fill = fill;
    }

    /// The configuration of an existing directory, labelled with its filesystem type.
    pub fn existing(fstype: &str) -> FsConfig {
        FsConfig::plain(
            format!("{fstype} (existing dir)"),
            None,
            Vec::new(),
            String::new(),
        )
    }
}

/// A device the user consented to, besides the target: an external log or journal, a further
/// btrfs device. It is checked as the target is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExtraDevice {
    pub path: std::path::PathBuf,
    /// Overwrite it even when it carries a filesystem or partition table (`--force-extra-device`).
    #[serde(default)]
    pub force: bool,
}
