//! Drivers a suite file defines (`[[driver]]`): command templates for a filesystem fsbench
//! has no row for, usable in `--fs` by name. A configuration carries its driver, so results
//! read back without the suite file.

use std::path::{Path, PathBuf};

use fsbench_model::filesystem::{Capability, FsType, UserDriver};

use super::{FsTypeExt, Toolset};
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_measure::tools;

/// Where a template's words go.
pub(crate) struct Slots<'a> {
    pub device: &'a Path,
    pub mountpoint: &'a Path,
    /// mkfs: the configuration's mkfs words; mount: its mount options as one word.
    pub options: &'a [String],
}

/// What fsbench does with a `[[driver]]` table: checks it and finds its programs.
pub trait UserDriverExt {
    /// Refuses a driver that cannot work: a built-in's name, a template without its device.
    fn validate(&self) -> anyhow::Result<()>;
    /// Resolves the templates' programs, or names the package to install.
    fn toolset(&self) -> Result<Toolset, FsbenchError>;
}

impl UserDriverExt for UserDriver {
    fn validate(&self) -> anyhow::Result<()> {
        let name = self.name.trim();
        let bad = |why: String| invalid(format!("[[driver]] `{}`: {why}", self.name));
        if name.is_empty() || name.contains([',', ':']) || name.contains(char::is_whitespace) {
            return Err(bad(
                "a name without spaces, commas or colons is needed".into()
            ));
        }
        if FsType::parse(name).is_ok() || name == FsType::User.name() {
            return Err(bad(
                "the name is a built-in filesystem's; choose another".into()
            ));
        }
        let needs = |what: &str, template: &str, slots: &[&str]| {
            let words = split(template).map_err(|e| bad(format!("{what}: {e}")))?;
            if words.first().is_none_or(|w| w.contains('{')) {
                return Err(bad(format!(
                    "{what} `{template}` must start with a program"
                )));
            }
            match slots.iter().find(|s| !template.contains(*s)) {
                Some(slot) => Err(bad(format!("{what} `{template}` lacks {slot}"))),
                None => Ok(()),
            }
        };
        needs("mkfs", &self.mkfs, &["{device}"])?;
        match (&self.mount_type, &self.mount) {
            (Some(_), None) => {}
            (None, Some(command)) => needs("mount", command, &["{device}", "{mountpoint}"])?,
            _ => return Err(bad("give either mount_type or a mount command".into())),
        }
        if let Some(fsck) = &self.fsck {
            needs("fsck", fsck, &["{device}"])?;
        }
        if let Some(unmount) = &self.unmount {
            needs("unmount", unmount, &["{mountpoint}"])?;
        }
        Ok(())
    }

    fn toolset(&self) -> Result<Toolset, FsbenchError> {
        let package = self.package.as_deref().unwrap_or("that provides it");
        let program = |template: &str| {
            let word = split(template).ok().and_then(|w| w.into_iter().next());
            tools::require(&word.unwrap_or_default(), package)
        };
        for template in [&self.mount, &self.unmount].into_iter().flatten() {
            program(template)?;
        }
        let fsck = self.fsck.as_deref().map(program).transpose()?;
        Ok(Toolset {
            mkfs: Some(program(&self.mkfs)?),
            fsck,
            version: Some(format!("user driver `{}` ({})", self.name, declared(self))),
            fsck_version: None,
        })
    }
}

/// The declared capabilities: `FIEMAP, fallocate, O_DIRECT, hard links` or what lacks.
fn declared(driver: &UserDriver) -> String {
    let said: Vec<String> = Capability::ALL
        .iter()
        .map(|c| {
            if driver.has(*c) {
                c.what().to_string()
            } else {
                format!("no {}", c.what())
            }
        })
        .collect();
    format!("declares {}", said.join(", "))
}

/// `template`'s words with its slots filled: a word `{options}` becomes the options
/// (none: no word), and `{device}`, `{mountpoint}`, `{options}` inside words their text.
pub(crate) fn expand(template: &str, slots: &Slots) -> anyhow::Result<(PathBuf, Vec<String>)> {
    let mut words = split(template)?.into_iter();
    let program = PathBuf::from(words.next().unwrap_or_default());
    let joined = slots.options.join(",");
    let mut args = Vec::new();
    for word in words {
        if word == "{options}" {
            args.extend(slots.options.iter().cloned());
            continue;
        }
        args.push(
            word.replace("{device}", &slots.device.display().to_string())
                .replace("{mountpoint}", &slots.mountpoint.display().to_string())
                .replace("{options}", &joined),
        );
    }
    Ok((program, args))
}

fn split(template: &str) -> anyhow::Result<Vec<String>> {
    shlex::split(template).ok_or_else(|| invalid(format!("unbalanced quotes in `{template}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver(mkfs: &str, mount: Option<&str>) -> UserDriver {
        UserDriver {
            name: "mine".into(),
            package: None,
            mkfs: mkfs.into(),
            mount_type: mount.is_none().then(|| "ext4".into()),
            mount: mount.map(String::from),
            fsck: None,
            unmount: None,
            fiemap: true,
            fallocate: true,
            o_direct: true,
            hard_links: true,
        }
    }

    #[test]
    fn templates_need_their_device_and_names_must_be_new() {
        assert!(
            driver("mkfs.ext4 -F {options} {device}", None)
                .validate()
                .is_ok()
        );
        for (d, want) in [
            (driver("mkfs.ext4 -F", None), "lacks {device}"),
            (driver("{device}", None), "must start with a program"),
            (
                driver("mkfs.x {device}", Some("fuse {device}")),
                "lacks {mountpoint}",
            ),
            (
                UserDriver {
                    name: "ext4".into(),
                    ..driver("m {device}", None)
                },
                "built-in",
            ),
            (
                UserDriver {
                    mount: Some("f {device} {mountpoint}".into()),
                    ..driver("m {device}", None)
                },
                "either mount_type or",
            ),
        ] {
            let err = d.validate().unwrap_err().to_string();
            assert!(err.contains(want), "{want}: {err}");
        }
    }

    #[test]
    fn slots_are_filled() {
        let options = ["-O".to_string(), "^has_journal".to_string()];
        let slots = Slots {
            device: Path::new("/dev/loop3"),
            mountpoint: Path::new("/s/run1/mnt"),
            options: &options,
        };
        let (program, args) = expand("mkfs.ext4 -F -q {options} {device}", &slots).unwrap();
        assert_eq!(program, Path::new("mkfs.ext4"));
        assert_eq!(args, ["-F", "-q", "-O", "^has_journal", "/dev/loop3"]);
        let none = Slots {
            options: &[],
            ..slots
        };
        let (_, args) = expand("fuse {device} {mountpoint} {options}", &none).unwrap();
        assert_eq!(args, ["/dev/loop3", "/s/run1/mnt"]);
    }
}
