//! One filesystem configuration, from `--fs` or a suite file's `[[config]]`.

use serde::{Deserialize, Serialize};

use crate::drivers::{FsTypeExt, UserDriverExt};
use crate::error::invalid;
use fsbench_model::filesystem::{Capability, FsType, UserDriver};

/// One filesystem configuration: a filesystem and how it is made and mounted.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(try_from = "RawFsConfig")]
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFsConfig {
    /// Absent only for an existing directory's configuration, as saved with its results.
    fs: Option<FsType>,
    label: Option<String>,
    #[serde(default)]
    mkfs: MkfsArgs,
    #[serde(default)]
    mount: String,
    /// zfs's pool properties (`ashift=12,autoexpand=on`), in place of `mkfs`.
    pool: Option<String>,
    /// zfs's dataset properties (`recordsize=16k,atime=off`), in place of `mount`.
    dataset: Option<String>,
    age: Option<String>,
    fill: Option<u8>,
    sched: Option<String>,
    wcache: Option<bool>,
    background: Option<String>,
    driver: Option<UserDriver>,
}

/// mkfs arguments as one shell-quoted string or as a list.
#[derive(Deserialize, Default)]
#[serde(untagged, expecting = "`mkfs`: a string or a list of strings")]
enum MkfsArgs {
    #[default]
    None,
    Line(String),
    List(Vec<String>),
}

impl TryFrom<RawFsConfig> for FsConfig {
    type Error = anyhow::Error;

    fn try_from(mut raw: RawFsConfig) -> anyhow::Result<FsConfig> {
        check_label(raw.label.as_deref())?;
        let mut mkfs = match std::mem::take(&mut raw.mkfs) {
            MkfsArgs::None => Vec::new(),
            MkfsArgs::Line(line) => split_words(&line)?,
            MkfsArgs::List(list) => list,
        };
        // A saved zfs configuration keeps its properties in `mkfs` and `mount`, so those are
        // read for zfs too, but not beside `pool` and `dataset`.
        if let Some(pool) = raw.pool.take() {
            pool_or_dataset(raw.fs, "pool", mkfs.is_empty())?;
            mkfs = pool_words(&pool);
        }
        if let Some(dataset) = raw.dataset.take() {
            pool_or_dataset(raw.fs, "dataset", raw.mount.is_empty())?;
            raw.mount = dataset;
        }
        if raw.fs == Some(FsType::Zfs) {
            crate::drivers::zfs::check_properties(&mkfs, &raw.mount)?;
        }
        let mut config = match raw.fs {
            Some(fs) => FsConfig::new(fs, mkfs, raw.mount, raw.label.clone()),
            None => FsConfig::plain(
                raw.label.clone().unwrap_or_else(|| "existing dir".into()),
                None,
                mkfs,
                raw.mount,
            ),
        };
        match (raw.driver, raw.fs) {
            (Some(driver), Some(FsType::User)) => {
                driver.validate()?;
                config.set_driver(driver, raw.label.is_some());
            }
            (None, Some(FsType::User)) => {
                return Err(invalid("`fs = \"user\"` needs its `driver` table"));
            }
            (Some(_), _) => return Err(invalid("a `driver` table goes with `fs = \"user\"`")),
            (None, _) => {}
        }
        config.prepared(raw.age, raw.fill, raw.label.is_some());
        config.scheduled(raw.sched, raw.label.is_some());
        config.cached(raw.wcache, raw.label.is_some());
        config.loaded(raw.background, raw.label.is_some())?;
        Ok(config)
    }
}

/// A label names a configuration in every table and finds its results again: never blank.
fn check_label(label: Option<&str>) -> anyhow::Result<()> {
    match label {
        Some(l) if l.trim().is_empty() => Err(invalid(
            "an empty configuration label: give `label=NAME` a name or leave it out",
        )),
        _ => Ok(()),
    }
}

fn split_words(line: &str) -> anyhow::Result<Vec<String>> {
    shlex::split(line).ok_or_else(|| invalid(format!("unbalanced quotes in mkfs options `{line}`")))
}

impl FsConfig {
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

    /// A configuration of `fs` with `mkfs` and `mount` and nothing else (no aging, fill,
    /// scheduler, write cache, background load or user driver).
    fn plain(label: String, fs: Option<FsType>, mkfs: Vec<String>, mount: String) -> FsConfig {
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
        }
    }

    /// What its driver is declared to lack (a user driver's flags; built-ins are probed).
    pub fn lacks(&self) -> Vec<Capability> {
        self.driver
            .as_ref()
            .map_or_else(Vec::new, UserDriver::lacks)
    }

    /// Makes this a configuration of user driver `driver`; a label fsbench made names it.
    fn set_driver(&mut self, driver: UserDriver, labelled: bool) {
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

    /// Sets the background load (`none` runs without one but says so in the label, beside
    /// the loaded configurations of `--background none,cpu:2`); a label fsbench made says it.
    pub fn loaded(&mut self, load: Option<String>, labelled: bool) -> anyhow::Result<()> {
        let Some(text) = load else { return Ok(()) };
        let parsed = Load::parse(&text).map_err(invalid)?;
        if !labelled {
            self.label.push_str(&format!(" bg={text}"));
        }
        self.background = parsed.map(|_| text);
        Ok(())
    }

    /// Sets the aging profile and fill level; a label fsbench made says them, so that an aged
    /// and a fresh configuration of one filesystem are told apart.
    fn prepared(&mut self, age: Option<String>, fill: Option<u8>, labelled: bool) {
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

    /// Parses one `--fs` value: `ext4,xfs` (several plain filesystems) or
    /// `FS:mkfs=ARGS:mount=OPTS:age=PROFILE:fill=PERCENT:sched=NAME:bg=LOAD:wcache=on|off:label=NAME` (one
    /// configuration; any key may be left out).
    pub fn parse_cli(text: &str) -> anyhow::Result<Vec<FsConfig>> {
        FsConfig::parse_cli_with(text, &[])
    }

    /// [`FsConfig::parse_cli`], where a name may also be one of a suite file's `drivers`.
    pub fn parse_cli_with(text: &str, drivers: &[UserDriver]) -> anyhow::Result<Vec<FsConfig>> {
        let Some((name, rest)) = text.split_once(':') else {
            return text
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|name| {
                    let (fs, driver) = resolve(name, drivers)?;
                    let mut config = FsConfig::new(fs, Vec::new(), String::new(), None);
                    if let Some(driver) = driver {
                        config.set_driver(driver, false);
                    }
                    Ok(config)
                })
                .collect();
        };
        let (fs, driver) = resolve(name, drivers)?;
        let (mut mkfs, mut mount, mut label) = (None, None, None);
        let (mut age, mut fill, mut sched, mut background) = (None, None, None, None);
        let mut wcache = None;
        for (key, value) in split_keyed(rest)? {
            zfs_keys(fs, key)?;
            let slot = match key {
                "mkfs" | "pool" => &mut mkfs,
                "mount" | "dataset" => &mut mount,
                "age" => &mut age,
                "fill" => &mut fill,
                "sched" => &mut sched,
                "bg" => &mut background,
                "wcache" => &mut wcache,
                _ => &mut label,
            };
            if slot.replace(value.to_string()).is_some() {
                return Err(invalid(format!("`{key}=` given twice in --fs `{text}`")));
            }
        }
        let mkfs = match fs {
            FsType::Zfs => pool_words(mkfs.as_deref().unwrap_or("")),
            _ => split_words(mkfs.as_deref().unwrap_or(""))?,
        };
        if fs == FsType::Zfs {
            crate::drivers::zfs::check_properties(&mkfs, mount.as_deref().unwrap_or(""))?;
        }
        check_label(label.as_deref())?;
        let fill = fill.map(|f| crate::aging::parse_fill(&f)).transpose()?;
        let labelled = label.is_some();
        let mut config = FsConfig::new(fs, mkfs, mount.unwrap_or_default(), label);
        if let Some(driver) = driver {
            config.set_driver(driver, labelled);
        }
        config.prepared(age, fill, labelled);
        config.scheduled(sched, labelled);
        config.cached(wcache.as_deref().map(parse_wcache).transpose()?, labelled);
        config.loaded(background, labelled)?;
        Ok(vec![config])
    }
}

/// `wcache=on` or `wcache=off`.
fn parse_wcache(text: &str) -> anyhow::Result<bool> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(invalid(format!(
            "wcache=`{text}`: expected on (`write back`: the kernel sends flushes) or off (`write through`: it does not)"
        ))),
    }
}

/// A built-in filesystem or one of `drivers`, by name.
fn resolve(name: &str, drivers: &[UserDriver]) -> anyhow::Result<(FsType, Option<UserDriver>)> {
    match drivers.iter().find(|d| d.name == name.trim()) {
        Some(d) => Ok((FsType::User, Some(d.clone()))),
        None => match FsType::parse(name) {
            Ok(fs) => Ok((fs, None)),
            Err(e) if drivers.is_empty() => Err(e),
            Err(e) => {
                let names: Vec<&str> = drivers.iter().map(|d| d.name.as_str()).collect();
                Err(invalid(format!(
                    "{e}, and the suite file's drivers {}",
                    names.join(", ")
                )))
            }
        },
    }
}

/// zfs takes `pool=` and `dataset=` properties where other filesystems take `mkfs=` and
/// `mount=` options.
fn zfs_keys(fs: FsType, key: &str) -> anyhow::Result<()> {
    let (zfs, other) = (["pool", "dataset"], ["mkfs", "mount"]);
    match (
        fs == FsType::Zfs,
        zfs.iter().position(|k| *k == key),
        other.iter().position(|k| *k == key),
    ) {
        (true, _, Some(i)) => Err(invalid(format!(
            "zfs takes `{}=` properties, not `{key}=` (e.g. zfs:pool=ashift=12:dataset=recordsize=16k)",
            zfs[i]
        ))),
        (false, Some(_), _) => Err(invalid(format!(
            "`{key}=` is for zfs; {fs} takes mkfs= and mount="
        ))),
        _ => Ok(()),
    }
}

/// `pool` or `dataset` in a suite file: for zfs only, and not beside `mkfs` or `mount`.
fn pool_or_dataset(fs: Option<FsType>, key: &str, alone: bool) -> anyhow::Result<()> {
    if fs != Some(FsType::Zfs) {
        return Err(invalid(format!(
            "`{key}` is for zfs; give mkfs and mount instead"
        )));
    }
    if !alone {
        return Err(invalid(format!(
            "zfs's `{key}` properties are given twice (also as `{}`)",
            if key == "pool" { "mkfs" } else { "mount" }
        )));
    }
    Ok(())
}

/// zfs pool properties `ashift=12,autoexpand=on` as words.
fn pool_words(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// Splits `mkfs=-O ^has_journal:mount=data=writeback` at the colons that start a known key,
/// so values may contain `=`, `,` and other colons.
fn split_keyed(text: &str) -> anyhow::Result<Vec<(&str, &str)>> {
    const KEYS: [&str; 10] = [
        "mkfs=", "mount=", "pool=", "dataset=", "label=", "age=", "fill=", "sched=", "bg=",
        "wcache=",
    ];
    let starts_key = |s: &str| KEYS.iter().find(|k| s.starts_with(*k)).copied();
    let Some(first) = starts_key(text) else {
        return Err(invalid(format!(
            "in --fs, expected mkfs=, mount=, pool=, dataset=, age=, fill=, sched=, bg=, wcache= or label= after the filesystem, found `{text}`"
        )));
    };
    let mut out = Vec::new();
    let mut key = first;
    let mut value_start = first.len();
    let mut i = value_start;
    while i <= text.len() {
        let at_end = i == text.len();
        let next = (!at_end && text.as_bytes()[i] == b':')
            .then(|| starts_key(&text[i + 1..]))
            .flatten();
        if at_end || next.is_some() {
            out.push((key.trim_end_matches('='), &text[value_start..i]));
            if let Some(k) = next {
                key = k;
                value_start = i + 1 + k.len();
                i = value_start;
                continue;
            }
        }
        i += 1;
    }
    Ok(out)
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

/// A background load: stress-ng's CPU workers and disk workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    pub cpu: u32,
    pub io: u32,
}

impl Load {
    /// `none`, `cpu:N`, `io:N` or both joined by `+` (`cpu:2+io:1`); `None` for `none`.
    pub fn parse(text: &str) -> Result<Option<Load>, String> {
        if text == "none" {
            return Ok(None);
        }
        let mut load = Load { cpu: 0, io: 0 };
        for part in text.split('+') {
            let (kind, count) = part.split_once(':').ok_or_else(|| {
                format!("background `{text}`: expected none, cpu:N, io:N or cpu:N+io:M")
            })?;
            let n: u32 = (count.parse().ok())
                .filter(|n| (1..=1024).contains(n))
                .ok_or_else(|| format!("background `{part}`: expected 1 to 1024 workers"))?;
            match kind {
                "cpu" => load.cpu = n,
                "io" => load.io = n,
                _ => return Err(format!("background `{part}`: the loads are cpu and io")),
            }
        }
        Ok(Some(load))
    }
}
