//! A user driver's words that may name a device or a file. fsbench cannot know what its
//! tools' options mean, so every word of its templates (but the program) and of its
//! configuration's mkfs and mount options is looked at in every form a tool may read a path
//! from: the whole word, an attached short option's value (`-Jdevice=...`), a long option's
//! (`--journal=...`), each comma-separated item and each value after a `=`. An absolute path
//! or a blkid tag must be the target itself or a device consented to (a file, a directory or
//! a name that does not exist is refused: a tool could write it); a relative path must not
//! leave the empty directory the tools run in; `{device}` stands alone, never extended into
//! another device's name (`{device}1`).

use std::path::{Component, Path};

use fsbench_model::config::FsConfig;
use fsbench_model::filesystem::UserDriver;

use super::{Named, is_tag};
use crate::drivers::Names;
use fsbench_measure::error::invalid;

/// The slots fsbench fills: the target, the run's mount point, the configuration's options
/// (checked as options of their own).
const DEVICE: &str = "{device}";
const MOUNTPOINT: &str = "{mountpoint}";
const OPTIONS: &str = "{options}";

/// Every word of `driver`'s templates and of `config`'s mkfs and mount options that may name
/// a device or a file; an error for a word that leaves the tools' directory or extends
/// `{device}`.
pub(super) fn words(driver: &UserDriver, config: &FsConfig) -> anyhow::Result<Vec<Named>> {
    let templates = [
        ("mkfs template", Some(&driver.mkfs)),
        ("mount template", driver.mount.as_ref()),
        ("fsck template", driver.fsck.as_ref()),
        ("unmount template", driver.unmount.as_ref()),
    ];
    let mut sources = Vec::new();
    for (what, template) in templates {
        let Some(template) = template else { continue };
        let words = shlex::split(template)
            .ok_or_else(|| invalid(format!("unbalanced quotes in `{template}`")))?;
        // The program is the driver's own choice of tool, found in PATH.
        sources.extend(words.into_iter().skip(1).map(|w| (what, w)));
    }
    sources.extend(config.mkfs.iter().map(|w| ("mkfs options", w.clone())));
    let mount = config.mount.split(',').filter(|o| !o.is_empty());
    sources.extend(mount.map(|o| ("mount options", o.to_string())));
    let mut found = Vec::new();
    for (what, word) in sources {
        let source = format!("`{word}` of user driver `{}`'s {what}", driver.name);
        for token in candidates(&word) {
            if let Some(named) = classify(&token, &source)? {
                found.push(named);
            }
        }
    }
    Ok(found)
}

/// The forms in which a tool may read a path from `word`, slots left in.
fn candidates(word: &str) -> Vec<String> {
    let word = word.replace(OPTIONS, "");
    let mut wholes = vec![word.clone()];
    if let Some(long) = word.strip_prefix("--") {
        wholes.extend(long.split_once('=').map(|(_, value)| value.to_string()));
    } else if let Some(short) = word.strip_prefix('-') {
        // `-Jdevice=...`: whatever follows the option letter may be its value.
        let mut chars = short.chars();
        chars.next();
        wholes.push(chars.as_str().to_string());
    }
    let mut found = Vec::new();
    for whole in wholes {
        for item in whole.split(',') {
            found.push(item.to_string());
            found.extend(
                item.match_indices('=')
                    .map(|(at, _)| item[at + 1..].to_string()),
            );
        }
    }
    found.retain(|t| !t.is_empty());
    found.sort();
    found.dedup();
    found
}

/// What `token` (of the word `source` describes) is to the device rule: nothing to check,
/// a path or tag to resolve, or an error.
fn classify(token: &str, source: &str) -> anyhow::Result<Option<Named>> {
    if token.contains(DEVICE) || token.contains(MOUNTPOINT) {
        let below_mountpoint = token
            .strip_prefix(MOUNTPOINT)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if token == DEVICE || below_mountpoint {
            return Ok(None);
        }
        return Err(invalid(format!(
            "`{token}` in {source}: a slot is a word (or a value) of its own, `{DEVICE}` \
             alone and `{MOUNTPOINT}` alone or followed by `/`; extended, it may name another \
             device than the target"
        )));
    }
    let relative = !token.starts_with('/') && !is_tag(token, false);
    if relative
        && Path::new(token)
            .components()
            .any(|c| c == Component::ParentDir)
    {
        return Err(fsbench_measure::error::FsbenchError::Refused {
            path: token.into(),
            reason: format!(
                "`{token}` in {source} leaves the empty directory the driver's tools run in; \
                 fsbench writes only to what it is given (give the target's `{DEVICE}`)"
            ),
        }
        .into());
    }
    // A relative path names something only through the working directory's contents, and
    // the tools run in an empty one: resolved against the user's all the same, a block
    // device there is refused as it is for the built-ins.
    let names = (!relative).then_some(Names::Device);
    Ok(Some(Named {
        source: Some(source.to_string()),
        ..Named::new("a word", token, names)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(word: &str) -> Vec<String> {
        candidates(word)
    }

    #[test]
    fn a_path_is_found_in_every_form_a_tool_may_read_it() {
        for (word, want) in [
            ("-Jdevice=/dev/loop3", "/dev/loop3"),
            ("device=/dev/loop3", "/dev/loop3"),
            ("/dev/loop3", "/dev/loop3"),
            ("--journal=/dev/loop3", "/dev/loop3"),
            ("-o", "-o"),
            ("size=64m,logdev=/dev/sdb", "/dev/sdb"),
            ("device=UUID=ab", "UUID=ab"),
            ("-Ljournal", "journal"),
        ] {
            assert!(tokens(word).contains(&want.to_string()), "{word}: {want}");
        }
        assert!(tokens("{options}").is_empty());
    }

    #[test]
    fn slots_stand_alone_and_relative_paths_stay_in_the_tool_directory() {
        let source = "`w` of user driver `x`'s mkfs template";
        for ok in [
            "{device}",
            "{mountpoint}",
            "{mountpoint}/sub",
            "plain",
            "sub/dir",
        ] {
            assert!(classify(ok, source).is_ok(), "{ok}");
        }
        assert!(classify("{device}", source).unwrap().is_none());
        for (bad, want) in [
            ("{device}1", "extended"),
            ("/x{device}", "extended"),
            ("{mountpoint}x", "extended"),
            ("../../dev/loop3", "leaves the empty directory"),
            ("a/../../b", "leaves the empty directory"),
        ] {
            let err = classify(bad, source).unwrap_err().to_string();
            assert!(err.contains(want) && err.contains(bad), "{bad}: {err}");
        }
        let absolute = classify("/dev/loop3", source).unwrap().unwrap();
        assert_eq!(absolute.names, Some(Names::Device));
        let tag = classify("UUID=ab", source).unwrap().unwrap();
        assert_eq!(tag.names, Some(Names::Device));
        assert_eq!(classify("loop3", source).unwrap().unwrap().names, None);
    }
}
