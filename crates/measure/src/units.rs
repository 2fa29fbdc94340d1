//! Sizes as users write them, with fsbench's error, `NAME=VALUE` items, and paths as
//! messages show them.

use crate::error::invalid;

/// `item`'s name and value when it is written `NAME=VALUE` with neither empty.
pub fn name_value(item: &str) -> Option<(&str, &str)> {
    item.split_once('=')
        .filter(|(name, value)| !name.is_empty() && !value.is_empty())
}

/// Parses a size with an optional binary suffix: k, m, g, t, p (also KiB, MB, ...; all powers of 1024).
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    fsbench_model::units::parse_size(text).map_err(invalid)
}

/// The longest member path shown in an error message; longer ones are shortened.
const SHOWN_PATH: usize = 160;

/// A path for a message (a tar member, a failed file): lossy UTF-8, shortened in the middle when very long.
pub fn shown(path: &[u8]) -> String {
    let text = String::from_utf8_lossy(path);
    if text.chars().count() <= SHOWN_PATH {
        return text.into_owned();
    }
    let head: String = text.chars().take(SHOWN_PATH / 2).collect();
    let tail: Vec<char> = text.chars().rev().take(SHOWN_PATH / 4).collect();
    let tail: String = tail.into_iter().rev().collect();
    format!("{head}…{tail} ({} bytes)", path.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_value_wants_both_sides() {
        assert_eq!(name_value("recordsize=16k"), Some(("recordsize", "16k")));
        assert_eq!(name_value("a=b=c"), Some(("a", "b=c")));
        for item in ["recordsize", "=16k", "recordsize=", "="] {
            assert_eq!(name_value(item), None, "{item}");
        }
    }

    #[test]
    fn a_bad_size_is_invalid_input() {
        assert_eq!(parse_size("8G").unwrap(), 8 << 30);
        let e = parse_size("12Q").unwrap_err();
        assert!(matches!(
            e.downcast_ref(),
            Some(crate::error::FsbenchError::InvalidInput(_))
        ));
    }
}
