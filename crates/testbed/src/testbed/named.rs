//! Devices and files named inside mkfs arguments and mount options. Every word that may name
//! one is resolved before anything runs — relative to the working directory, `UUID=`-style
//! tags through blkid, devices compared by number so that a symlink is its device — and
//! anything that is not the target itself or a device consented to with `--extra-device` is
//! refused, as is every option that makes mkfs write a file. A user driver's templates and
//! options are held to the same rule word by word ([`user_driver`]).

use std::fs::Metadata;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::TargetSpec;
use super::device::{self, DeviceKind, refused};
use crate::drivers::{FsTypeExt, Names, OptionNames};
use fsbench_measure::error::invalid;
use fsbench_measure::tools;
use fsbench_model::config::{ExtraDevice, FsConfig};
use fsbench_model::filesystem::FsType;

mod user_driver;

/// One word of the options that may name a device or a file.
#[derive(Debug, PartialEq)]
struct Named {
    /// The option as the user wrote it, without the value: `-l logdev`, `-z`, `journal_path`.
    option: String,
    token: String,
    /// `None`: a value of no known meaning, a device only if it resolves to a block device.
    names: Option<Names>,
    /// A mount option (else a word of the mkfs arguments).
    mount: bool,
    /// Where a user driver's word is (`` `-Jdevice=/dev/loop3` in user driver `x`'s mkfs
    /// template ``): said in place of the option.
    source: Option<String>,
}

impl Named {
    fn new(option: impl Into<String>, token: &str, names: Option<Names>) -> Named {
        Named {
            option: option.into(),
            token: token.to_string(),
            names,
            mount: false,
            source: None,
        }
    }

    /// The option with its value, as written.
    fn shown(&self) -> String {
        match (self.option.as_str(), self.option.starts_with('-')) {
            ("a device argument", _) => format!("the device argument `{}`", self.token),
            (o, true) if !o.contains(' ') => format!("`{o} {}`", self.token),
            (o, _) if self.token.is_empty() => format!("`{o}`"),
            (o, _) => format!("`{o}={}`", self.token),
        }
    }
}

/// The words of mkfs arguments `words` that may name a device or a file, read as the tool's
/// getopt reads them: bundled short options (`-fq`, `-b4096`), `--long=value`, `--`.
fn mkfs_words(table: &OptionNames, words: &[String]) -> Vec<Named> {
    let mut found = Vec::new();
    let mut words = words.iter();
    let mut options_ended = false;
    while let Some(word) = words.next() {
        if options_ended || !word.starts_with('-') || word == "-" {
            found.push(Named::new("a device argument", word, Some(Names::Device)));
            continue;
        }
        if word == "--" {
            options_ended = true;
        } else if let Some(long) = word.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            if table.long_with_value.contains(&name)
                && let Some(value) = attached.or_else(|| words.next().map(String::as_str))
            {
                found.extend(option_value(table, &format!("--{name}"), value));
            }
        } else if let Some((at, c)) = word
            .char_indices()
            .skip(1)
            .find(|(_, c)| table.short_with_value.contains(*c))
        {
            let rest = &word[at + c.len_utf8()..];
            let value = if rest.is_empty() {
                words.next().map(String::as_str)
            } else {
                Some(rest)
            };
            if let Some(value) = value {
                found.extend(option_value(table, &format!("-{c}"), value));
            }
        }
    }
    found
}

/// What the value of mkfs option `option` names: the whole value, or its `key=value`
/// sub-options; a sub-option of no known meaning is looked at as a whole and by its value.
fn option_value(table: &OptionNames, option: &str, value: &str) -> Vec<Named> {
    let entry = |key: &str| {
        table
            .mkfs
            .iter()
            .find(|(o, k, _)| *o == option && *k == key)
            .map(|(_, _, names)| *names)
    };
    if let Some(names) = entry("") {
        return vec![Named::new(option, value, Some(names))];
    }
    let mut found = Vec::new();
    for item in value.split(',') {
        let (key, sub) = item.split_once('=').unwrap_or((item, ""));
        match entry(key) {
            // xfs's `file=0`: the section is not a regular file.
            Some(Names::WrittenFile) if sub == "0" => {}
            Some(names) => found.push(Named::new(format!("{option} {key}"), sub, Some(names))),
            None => {
                found.push(Named::new(option, item, None));
                if !sub.is_empty() {
                    found.push(Named::new(format!("{option} {key}"), sub, None));
                }
            }
        }
    }
    found
}

/// The arguments that tell `fs`'s fsck about the external devices mkfs arguments `mkfs` name
/// (xfs_repair's `-l LOGDEV`).
pub(crate) fn fsck_args(fs: FsType, mkfs: &[String]) -> Vec<String> {
    let table = fs.driver().names;
    mkfs_words(table, mkfs)
        .into_iter()
        .filter_map(|n| {
            let (_, flag) = table.fsck.iter().find(|(o, _)| *o == n.option)?;
            Some([flag.to_string(), n.token])
        })
        .flatten()
        .collect()
}

/// The mount options of `options` that may name a device. mount(8)'s own `loop` is refused:
/// fsbench attaches its loop devices itself, and one mount attached would be nobody's to undo.
fn mount_words(table: &OptionNames, options: &str) -> anyhow::Result<Vec<Named>> {
    let mut found = Vec::new();
    for item in options.split(',').filter(|i| !i.is_empty()) {
        let (key, value) = item.split_once('=').unwrap_or((item, ""));
        if key == "loop" {
            return Err(invalid(format!(
                "mount option `{item}`: fsbench attaches its own loop devices; leave `loop` out"
            )));
        }
        if value.is_empty() {
            continue;
        }
        let names = table.mount.iter().find(|(k, _)| *k == key).map(|(_, n)| *n);
        found.push(Named {
            mount: true,
            ..Named::new(key, value, names)
        });
    }
    Ok(found)
}

/// What a device or file is, compared by number: a symlink or another name of a device is
/// that device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    Block(u64),
    File { dev: u64, ino: u64 },
}

fn identity(meta: &Metadata) -> Option<Identity> {
    if meta.file_type().is_block_device() {
        Some(Identity::Block(meta.rdev()))
    } else if meta.is_file() {
        Some(Identity::File {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    } else {
        None
    }
}

/// The tags blkid resolves in any position (`-J device=UUID=...`, `journal_path=LABEL=...`).
const TAGS: [&str; 4] = ["UUID=", "LABEL=", "PARTUUID=", "PARTLABEL="];

/// Whether `token` is a blkid tag `NAME=value`: where a device is expected, mke2fs and mount
/// resolve any tag blkid knows (`TYPE=ext4` included), not only those of [`TAGS`].
fn is_tag(token: &str, anywhere: bool) -> bool {
    if !anywhere {
        return TAGS
            .iter()
            .any(|t| token.starts_with(t) && token.len() > t.len());
    }
    fsbench_measure::units::name_value(token)
        .is_some_and(|(name, _)| name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
}

/// The devices blkid finds for tag `token`, its cache bypassed (a stale cache would name a
/// device that has changed since).
fn blkid_devices(token: &str) -> anyhow::Result<Vec<PathBuf>> {
    let blkid = tools::require("blkid", "util-linux")?;
    let args = ["-c", "/dev/null", "-t", token, "-o", "device"].map(String::from);
    let run = tools::run_within(&blkid, &args, Duration::from_secs(10))?;
    match run.code {
        Some(0) => Ok(run.output.lines().map(PathBuf::from).collect()),
        Some(2) => Ok(Vec::new()),
        _ => anyhow::bail!("blkid -t {token} failed: {}", run.output.trim()),
    }
}

/// Where `token` leads: the paths it names (none when it names nothing that exists) and how
/// it was resolved, in words.
fn resolve(token: &str, cwd: &Path, any_tag: bool) -> anyhow::Result<(Vec<PathBuf>, String)> {
    if is_tag(token, any_tag) {
        return Ok((blkid_devices(token)?, "through blkid".into()));
    }
    let path = cwd.join(token);
    let how = if token.starts_with('/') {
        String::new()
    } else {
        format!("relative to {}", cwd.display())
    };
    let exists = !token.is_empty() && path.symlink_metadata().is_ok();
    Ok((if exists { vec![path] } else { Vec::new() }, how))
}

/// The parsed major:minor of ext4's `journal_dev=` (the kernel's encoding, any base).
fn device_number(value: &str) -> Option<u64> {
    let number = if let Some(hex) = value.strip_prefix("0x") {
        u32::from_str_radix(hex, 16).ok()?
    } else if value.len() > 1
        && let Some(octal) = value.strip_prefix('0')
    {
        u32::from_str_radix(octal, 8).ok()?
    } else {
        value.parse::<u32>().ok()?
    };
    let major = (number & 0xfff00) >> 8;
    let minor = (number & 0xff) | ((number >> 12) & 0xfff00);
    Some(rustix::fs::makedev(major, minor))
}

/// What the suite may write to: the target, and the devices consented to besides it.
struct Consent {
    target: Option<Identity>,
    extra: Vec<(PathBuf, Identity, bool)>,
}

impl Consent {
    /// Whether `id` is the target or a consented device (which then counts as used).
    fn allows(&mut self, id: Identity) -> bool {
        if self.target == Some(id) {
            return true;
        }
        match self.extra.iter_mut().find(|(_, e, _)| *e == id) {
            Some((_, _, used)) => {
                *used = true;
                true
            }
            None => false,
        }
    }
}

/// Checks the devices and files every configuration's options name (see the module's
/// documentation), after checking each consented extra device as the target is checked.
pub fn check<'a>(
    configs: impl IntoIterator<Item = &'a FsConfig>,
    target: &TargetSpec,
    extra_devices: &[ExtraDevice],
) -> anyhow::Result<()> {
    let cwd = std::env::current_dir()?;
    let target_id = match target {
        TargetSpec::Device { path, .. } => path.metadata().ok().as_ref().and_then(identity),
        _ => None,
    };
    let mut consent = Consent {
        target: target_id,
        extra: Vec::new(),
    };
    for extra in extra_devices {
        let flag = format!("--force-extra-device {}", extra.path.display());
        if device::check_device(&extra.path, extra.force, &flag)? != DeviceKind::Block {
            return Err(invalid(format!(
                "--extra-device {}: not a block device (attach an image file with `losetup --find --show FILE` and name the loop device)",
                extra.path.display()
            )));
        }
        let id = extra.path.metadata().ok().as_ref().and_then(identity);
        let Some(id) = id.filter(|id| Some(*id) != target_id) else {
            return Err(invalid(format!(
                "--extra-device {} is the target itself",
                extra.path.display()
            )));
        };
        consent.extra.push((extra.path.clone(), id, false));
    }
    for config in configs {
        let Some(fs) = config.fs else { continue };
        let table = fs.driver().names;
        let mut named = if let Some(driver) = &config.driver {
            user_driver::words(driver, config)?
        } else if fs == FsType::Zfs {
            // Pool properties are NAME=VALUE words (suite.rs checked them), read as mount
            // options are.
            mount_words(table, &config.mkfs.join(","))?
        } else {
            mkfs_words(table, &config.mkfs)
        };
        named.extend(mount_words(table, &config.mount)?);
        for n in &named {
            check_named(n, fs, &cwd, &mut consent)?;
        }
    }
    if let Some((path, _, _)) = consent.extra.iter().find(|(_, _, used)| !used) {
        return Err(invalid(format!(
            "--extra-device {} is named by no mkfs or mount option",
            path.display()
        )));
    }
    Ok(())
}

fn check_named(n: &Named, fs: FsType, cwd: &Path, consent: &mut Consent) -> anyhow::Result<()> {
    let tool = if n.mount { "mount" } else { "mkfs" };
    let place = match &n.source {
        Some(source) => format!("`{}` in {source}", n.token),
        None => format!("{} in the {fs} {tool} options", n.shown()),
    };
    let relative = !n.token.starts_with('/') && !is_tag(&n.token, true);
    match n.names {
        Some(Names::WrittenFile) => {
            let file = if n.token.is_empty() {
                &n.option
            } else {
                &n.token
            };
            Err(refused(
                Path::new(file),
                format!(
                    "{place} makes mkfs write a file outside its scratch directory: fsbench writes nothing it was not given"
                ),
            ))
        }
        Some(Names::ReadFile) if relative => Err(invalid(format!(
            "{place}: give an absolute path (mkfs runs in an empty directory)"
        ))),
        Some(Names::ReadFile) => Ok(()),
        Some(Names::DeviceNumber) => check_device_number(&n.token, &place, consent),
        Some(Names::Device) | None => {
            let device_expected = n.names.is_some();
            let (paths, how) = resolve(&n.token, cwd, device_expected)?;
            if paths.is_empty() && device_expected {
                let how = if how.is_empty() {
                    how
                } else {
                    format!(" ({how})")
                };
                return Err(refused(
                    Path::new(&n.token),
                    format!("{place} names nothing that exists{how}"),
                ));
            }
            let how = if how.is_empty() {
                how
            } else {
                format!(", {} {how}", n.token)
            };
            for path in paths {
                let id = path.metadata().ok().as_ref().and_then(identity);
                let is_block = matches!(id, Some(Identity::Block(_)));
                match id {
                    _ if !device_expected && !is_block => {}
                    Some(id) if consent.allows(id) => {
                        if relative {
                            return Err(invalid(format!(
                                "{place}: give the device as an absolute path (mkfs and mount run in an empty directory)"
                            )));
                        }
                    }
                    _ => return Err(unconsented(&place, &path, &how, is_block)),
                }
            }
            Ok(())
        }
    }
}

/// A device given by its number (`major:minor`): allowed only where it is the target's or
/// consented to.
fn check_device_number(token: &str, place: &str, consent: &mut Consent) -> anyhow::Result<()> {
    let Some(rdev) = device_number(token) else {
        return Err(invalid(format!("{place}: not a device number")));
    };
    if consent.allows(Identity::Block(rdev)) {
        return Ok(());
    }
    let (major, minor) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
    let path = device::sysfs_node(major, minor)
        .and_then(|node| Some(Path::new("/dev").join(node.file_name()?)))
        .unwrap_or_else(|| PathBuf::from(format!("device {major}:{minor}")));
    Err(unconsented(
        place,
        &path,
        &format!(" (device {major}:{minor})"),
        true,
    ))
}

/// The refusal of `path`, named by the option at `place` (resolved as `how` says) though it is
/// neither the target nor consented to.
fn unconsented(place: &str, path: &Path, how: &str, is_block: bool) -> anyhow::Error {
    let holds = device::signature(path)
        .ok()
        .flatten()
        .map(|s| format!("; it holds an existing {s}"))
        .unwrap_or_default();
    let (what, consent) = match is_block {
        true => ("", HOW_TO_CONSENT),
        false => (", not a block device", ""),
    };
    refused(
        path,
        format!(
            "named in the mkfs or mount options ({place}{how}{what}), it is not the target{holds}{consent}"
        ),
    )
}

const HOW_TO_CONSENT: &str = ". fsbench writes only to devices it is given: to let mkfs and mount use it too, \
     name it with --extra-device (--force-extra-device to overwrite a filesystem on it)";

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        shlex::split(line).unwrap()
    }

    fn named(fs: FsType, mkfs: &str) -> Vec<(String, String, Option<Names>)> {
        mkfs_words(fs.driver().names, &words(mkfs))
            .into_iter()
            .map(|n| (n.option, n.token, n.names))
            .collect()
    }

    fn has(found: &[(String, String, Option<Names>)], option: &str, token: &str, names: Names) {
        assert!(
            found
                .iter()
                .any(|(o, t, n)| o == option && t == token && *n == Some(names)),
            "{option} {token} {names:?} not in {found:?}"
        );
    }

    #[test]
    fn every_device_and_file_naming_mkfs_option_is_found() {
        let xfs = named(
            FsType::Xfs,
            "-f -l logdev=loop3,size=64m -r rtdev=UUID=ab -d file,name=img,size=1g -psrc -c options=/etc/x",
        );
        has(&xfs, "-l logdev", "loop3", Names::Device);
        has(&xfs, "-r rtdev", "UUID=ab", Names::Device);
        has(&xfs, "-d file", "", Names::WrittenFile);
        has(&xfs, "-d name", "img", Names::Device);
        has(&xfs, "-p", "src", Names::ReadFile);
        has(&xfs, "-c options", "/etc/x", Names::ReadFile);
        assert!(
            named(FsType::Xfs, "-d file=0,name=x")
                .iter()
                .all(|n| n.2 != Some(Names::WrittenFile))
        );
        let ext = named(
            FsType::Ext4,
            "-Fq -J device=LABEL=j -zundo -b 4096 -L loop3 -d /tree",
        );
        has(&ext, "-J device", "LABEL=j", Names::Device);
        has(&ext, "-z", "undo", Names::WrittenFile);
        has(&ext, "-d", "/tree", Names::ReadFile);
        // A label is a value, not a device argument: looked at only if it resolves to a device.
        assert!(
            ext.contains(&("-L".into(), "loop3".into(), None)),
            "{ext:?}"
        );
        let btrfs = named(
            FsType::Btrfs,
            "-d single -m single --label=x --rootdir /r loop3 -- -x",
        );
        has(&btrfs, "a device argument", "loop3", Names::Device);
        has(&btrfs, "a device argument", "-x", Names::Device);
        has(&btrfs, "--rootdir", "/r", Names::ReadFile);
        assert!(
            !btrfs.iter().any(|n| n.1 == "single" && n.2.is_some()),
            "{btrfs:?}"
        );
    }

    #[test]
    fn fsck_is_told_of_external_devices() {
        let mkfs = words("-l logdev=/dev/a,size=64m -r rtdev=/dev/b");
        assert_eq!(
            fsck_args(FsType::Xfs, &mkfs),
            ["-l", "/dev/a", "-r", "/dev/b"]
        );
        assert!(fsck_args(FsType::Ext4, &words("-J device=/dev/a")).is_empty());
    }

    #[test]
    fn mount_options_naming_devices_are_found_and_loop_is_refused() {
        let ext = mount_words(
            FsType::Ext4.driver().names,
            "noatime,journal_path=loop3,journal_dev=0x703,usrjquota=q",
        )
        .unwrap();
        assert_eq!(ext[0].token, "loop3");
        assert_eq!(ext[0].names, Some(Names::Device));
        assert_eq!(ext[1].names, Some(Names::DeviceNumber));
        assert_eq!(ext[2].names, None);
        let xfs = mount_words(FsType::Xfs.driver().names, "logdev=/dev/sdb,rtdev=x").unwrap();
        assert!(xfs.iter().all(|n| n.names == Some(Names::Device)));
        assert_eq!(
            mount_words(FsType::Btrfs.driver().names, "device=/dev/sdc").unwrap()[0].names,
            Some(Names::Device)
        );
        for options in ["loop", "ro,loop=/dev/loop3"] {
            let err = mount_words(FsType::Ext4.driver().names, options).unwrap_err();
            assert!(err.to_string().contains("loop"), "{err}");
        }
    }

    #[test]
    fn tags_and_device_numbers() {
        assert!(is_tag("UUID=1234", false) && is_tag("PARTLABEL=x", false));
        assert!(!is_tag("TYPE=ext4", false) && is_tag("TYPE=ext4", true));
        assert!(!is_tag("size=64m", true) && !is_tag("UUID=", true) && !is_tag("/dev/x=y", true));
        let loop3 = rustix::fs::makedev(7, 3);
        for text in ["0x703", "1795", "03403"] {
            assert_eq!(device_number(text), Some(loop3), "{text}");
        }
        // Minors above 255 keep their high bits above the major's.
        assert_eq!(
            device_number(&(0x100000u32 | 0x700 | 0x12).to_string()),
            Some(rustix::fs::makedev(7, 0x112))
        );
        assert_eq!(device_number("loop3"), None);
    }

    #[test]
    fn relative_paths_resolve_against_the_working_directory() {
        let (paths, how) = resolve("null", Path::new("/dev"), true).unwrap();
        assert_eq!(paths, [PathBuf::from("/dev/null")]);
        assert_eq!(how, "relative to /dev");
        assert!(resolve("", Path::new("/dev"), true).unwrap().0.is_empty());
        assert!(
            resolve("no-such-thing", Path::new("/dev"), true)
                .unwrap()
                .0
                .is_empty()
        );
    }
}
