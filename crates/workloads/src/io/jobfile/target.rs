//! Absolute `filename` and `directory` names in a job file: those inside the directory
//! fsbench was given (`--dir`), which fsbench may write in, are taken relative to it (in the
//! run's fresh directory there); the block device it was given (`--target-device`) is a
//! job's one file, read and written raw; any other absolute name is refused when the job's
//! parameters are read.

use std::path::{Component, Path};

/// What fsbench was given to write in: the directory of `--dir`, and the block device of
/// `fsbench fio --target-device` (checked before the job file is read).
#[derive(Debug, Clone, Copy, Default)]
pub struct Targets<'a> {
    pub dir: Option<&'a Path>,
    pub device: Option<&'a Path>,
}

impl<'a> Targets<'a> {
    /// For `filename=` naming the block device fsbench was given: the device (`Err`: it is
    /// named beside other files, which fsbench does not do); `None` for any other line.
    pub(super) fn raw_device(&self, key: &str, value: &str) -> Option<Result<&'a Path, String>> {
        let device = self.device?;
        if key != "filename" {
            return None;
        }
        let resolved = |p: &Path| std::fs::canonicalize(p).ok();
        let same = |name: &str| {
            let name = Path::new(name);
            name == device || resolved(name).is_some_and(|n| Some(n) == resolved(device))
        };
        let names: Vec<&str> = value.split(':').collect();
        match names
            .iter()
            .filter(|n| n.starts_with('/') && same(n))
            .count()
        {
            0 => None,
            _ if names.len() == 1 => Some(Ok(device)),
            _ => Some(Err(format!(
                "`{key}={value}`: the block device is a job's one file (name it alone)"
            ))),
        }
    }
}

/// For `filename=/dev/null` or `filename=/dev/zero` alone, those two names exactly: the
/// kernel's device, the job's one file as fio opens it (no layout, nothing made nor
/// removed); `None` for any other line.
pub(super) fn kernel_device(key: &str, value: &str) -> Option<&'static Path> {
    let device = crate::io::params::KERNEL_DEVICES
        .iter()
        .find(|d| **d == value)?;
    (key == "filename").then(|| Path::new(*device))
}

/// A block device's size in bytes.
pub(super) fn device_size(device: &Path) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    std::fs::File::open(device)?.seek(SeekFrom::End(0))
}

/// `value` of `key` with each absolute name inside `target` made relative to it (`.` for the
/// target itself, as a `directory`); other names as written. `Err` says why a name cannot be.
pub(super) fn within(key: &str, value: &str, target: Option<&Path>) -> Result<String, String> {
    let Some(target) = target else {
        return Ok(value.to_string());
    };
    match key {
        "directory" => Ok(relative(key, value, target)?.unwrap_or_else(|| value.to_string())),
        "filename" => {
            let names: Vec<String> = (value.split(':'))
                .map(|name| match relative(key, name, target)? {
                    Some(inside) if inside == "." => Err(format!(
                        "`{key}={name}` is the directory fsbench was given, not a file in it"
                    )),
                    Some(inside) => Ok(inside),
                    None => Ok(name.to_string()),
                })
                .collect::<Result<_, String>>()?;
            Ok(names.join(":"))
        }
        _ => Ok(value.to_string()),
    }
}

/// `name` relative to `target` where it is absolute and inside it (`.`: the target itself);
/// `None` where it is not.
fn relative(key: &str, name: &str, target: &Path) -> Result<Option<String>, String> {
    let path = Path::new(name);
    if !path.is_absolute() {
        return Ok(None);
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!("`{key}={name}`: an absolute name with `..`"));
    }
    // The target as given, or as the kernel resolves it (`--dir /tmp/` or a symbolic link).
    let resolved = std::fs::canonicalize(target).ok();
    let inside = [Some(target), resolved.as_deref()]
        .into_iter()
        .flatten()
        .find_map(|t| path.strip_prefix(t).ok());
    Ok(inside.map(|rest| match rest.as_os_str().is_empty() {
        true => ".".to_string(),
        false => rest.to_string_lossy().trim_end_matches('/').to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_inside_the_target_become_relative_and_others_stay() {
        let t = Some(Path::new("/scratch/run"));
        assert_eq!(within("directory", "/scratch/run", t).unwrap(), ".");
        assert_eq!(within("directory", "/scratch/run/a/", t).unwrap(), "a");
        assert_eq!(
            within("filename", "/scratch/run/x:y:/tmp/z", t).unwrap(),
            "x:y:/tmp/z"
        );
        assert_eq!(
            within("filename", "/scratch/runs", t).unwrap(),
            "/scratch/runs"
        );
        assert!(within("filename", "/scratch/run", t).is_err());
        assert!(within("directory", "/scratch/run/../etc", t).is_err());
        assert_eq!(
            within("filename", "/scratch/run/x", None).unwrap(),
            "/scratch/run/x"
        );
    }
}
