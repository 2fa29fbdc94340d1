//! One filesystem configuration from `--fs` or a suite file's `[[config]]`: the options
//! read, checked and labelled.

use serde::Deserialize;

use crate::drivers::{FsTypeExt, UserDriverExt};
use fsbench_measure::error::invalid;
use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::{FsType, UserDriver};

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
    crash: Option<u32>,
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

/// A suite file's `[[config]]` table (or a configuration kept with results) as the
/// configuration it describes.
fn from_raw(mut raw: RawFsConfig) -> anyhow::Result<FsConfig> {
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
    load(&mut config, raw.background, raw.label.is_some())?;
    config.crash = raw.crash.map(check_crash).transpose()?;
    Ok(config)
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

/// Parses one `--fs` value: `ext4,xfs` (several plain filesystems) or
/// `FS:mkfs=ARGS:mount=OPTS:age=PROFILE:fill=PERCENT:sched=NAME:bg=LOAD:wcache=on|off:crash=N:label=NAME` (one
/// configuration; any key may be left out).
pub fn parse_fs(text: &str) -> anyhow::Result<Vec<FsConfig>> {
    parse_fs_with(text, &[])
}

/// [`parse_fs`], where a name may also be one of a suite file's `drivers`.
pub fn parse_fs_with(text: &str, drivers: &[UserDriver]) -> anyhow::Result<Vec<FsConfig>> {
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
    let (mut wcache, mut crash) = (None, None);
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
            "crash" => &mut crash,
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
    load(&mut config, background, labelled)?;
    config.crash = crash.as_deref().map(parse_crash).transpose()?;
    Ok(vec![config])
}

/// `crash=N`: the crash states to check, at least one.
pub fn parse_crash(text: &str) -> anyhow::Result<u32> {
    let n = text.parse::<u32>().map_err(|_| {
        invalid(format!(
            "crash=`{text}`: give the number of crash states to check (e.g. crash=500)"
        ))
    })?;
    check_crash(n)
}

fn check_crash(n: u32) -> anyhow::Result<u32> {
    match n {
        0 => Err(invalid(
            "crash=0 checks nothing: give at least one state, or leave it out",
        )),
        n => Ok(n),
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
    const KEYS: [&str; 11] = [
        "mkfs=", "mount=", "pool=", "dataset=", "label=", "age=", "fill=", "sched=", "bg=",
        "wcache=", "crash=",
    ];
    let starts_key = |s: &str| KEYS.iter().find(|k| s.starts_with(*k)).copied();
    let Some(first) = starts_key(text) else {
        return Err(invalid(format!(
            "in --fs, expected mkfs=, mount=, pool=, dataset=, age=, fill=, sched=, bg=, wcache=, crash= or label= after the filesystem, found `{text}`"
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

/// Sets `config`'s background load once `text` reads as one.
pub fn load(config: &mut FsConfig, text: Option<String>, labelled: bool) -> anyhow::Result<()> {
    if let Some(text) = &text {
        Load::parse(text).map_err(invalid)?;
    }
    config.loaded(text, labelled);
    Ok(())
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

/// A suite file's `[[config]]` tables as the tables of the configurations they describe; a
/// type error names its line and key in `text`, the file, whose configurations are these
/// as written unless `drivers_given` (its `[[driver]]`s changed them).
pub(super) fn configs_from_tables(
    configs: &mut [toml::Value],
    text: &str,
    drivers_given: bool,
) -> anyhow::Result<()> {
    for (i, config) in configs.iter_mut().enumerate() {
        let raw = (config.clone().try_into()).map_err(|e| located(text, e, drivers_given))?;
        let made = from_raw(raw).map_err(|e| invalid(format!("[[config]] {}: {e:#}", i + 1)))?;
        *config = toml::Value::try_from(made)?;
    }
    Ok(())
}

/// `error`, found in a table that has lost where each value was, with its line and key: the
/// text's configurations read again find it there (where drivers changed them, only when
/// they find the same error; a table's and a text's messages differ in how they say types).
fn located(text: &str, error: toml::de::Error, drivers_given: bool) -> anyhow::Error {
    #[derive(Deserialize)]
    struct Configs {
        #[serde(default)]
        #[allow(dead_code)] // read for its error only
        config: Vec<RawFsConfig>,
    }
    match toml::from_str::<Configs>(text) {
        Err(e) if e.span().is_some() && (!drivers_given || e.message() == error.message()) => {
            invalid(e.to_string())
        }
        _ => invalid(format!("[[config]]: {error}")),
    }
}
