//! fio's `kb_base`: how a job file's sizes read. In fio's default (1024, its compatibility
//! mode) `k`, `m`, `g`… are powers of 1024 and `KiB`, `MiB`… powers of 1000; with
//! `kb_base=1000` the other way round. fsbench's own sizes are powers of 1024 for both, so
//! a job file's sizes are written out in bytes as fio reads them. `unit_base` chooses bits
//! or bytes in fio's outputs: bytes (0 or 8) are taken, bits refused.

use crate::options::OptKind;

use super::KIND;

/// The job's `kb_base` (1024 unless given), or why its value is not fio's.
pub(super) fn kb_base(value: Option<&str>) -> Result<u64, String> {
    match value {
        None | Some("1024") => Ok(1024),
        Some("1000") => Ok(1000),
        Some(other) => Err(format!("`kb_base={other}` is 1024 or 1000")),
    }
}

/// fio's `unit_base`: bytes in the outputs (`0`: fio's choice, bytes for files; `8`) are
/// fsbench's; bits are not.
pub(super) fn unit_base(value: &str) -> Result<(), String> {
    match value {
        "0" | "8" => Ok(()),
        "1" => {
            Err("`unit_base=1`: figures in bits are not implemented (fsbench prints bytes)".into())
        }
        other => Err(format!("`unit_base={other}` is 0, 8 or 1")),
    }
}

/// `value` of the io workload's option `key` with each size written in bytes as fio reads
/// it under `kb_base`; other options' values as they are.
pub(super) fn as_fio_reads(key: &str, value: &str, kb_base: u64) -> String {
    let name = key.replace('_', "-");
    let sized = KIND
        .options
        .iter()
        .any(|o| o.name == name && matches!(o.kind, OptKind::Size));
    if sized {
        return bytes(value, kb_base).map_or_else(|| value.to_string(), |b| b.to_string());
    }
    if matches!(
        name.as_str(),
        "bssplit" | "write-bssplit" | "cmdprio-bssplit"
    ) {
        // SIZE/PCT[/…]:SIZE/PCT…[,WRITES]
        let direction = |list: &str| -> String {
            let parts: Vec<String> = (list.split(':'))
                .map(|part| match part.split_once('/') {
                    Some((size, rest)) => match bytes(size, kb_base) {
                        Some(b) => format!("{b}/{rest}"),
                        None => part.to_string(),
                    },
                    None => part.to_string(),
                })
                .collect();
            parts.join(":")
        };
        let directions: Vec<String> = value.split(',').map(direction).collect();
        return directions.join(",");
    }
    value.to_string()
}

/// A number with a size suffix in bytes as fio reads it; `None` without a suffix fio knows
/// (the value stays as written, and a bad one is refused where it is read).
fn bytes(text: &str, kb_base: u64) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (digits, suffix) = text.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let suffix = suffix.to_ascii_lowercase();
    let power = "kmgtp".find(suffix.get(..1)?)? as u32 + 1;
    let base = match &suffix[1..] {
        "" | "b" => kb_base,
        "ib" if kb_base == 1000 => 1024,
        "ib" => 1000,
        _ => return None,
    };
    n.checked_mul(base.checked_pow(power)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_fio_reads_them_under_either_base() {
        assert_eq!(as_fio_reads("bs", "4k", 1024), "4096");
        assert_eq!(as_fio_reads("bs", "4KiB", 1024), "4000");
        assert_eq!(as_fio_reads("size", "1m", 1000), "1000000");
        assert_eq!(as_fio_reads("size", "1MiB", 1000), "1048576");
        assert_eq!(as_fio_reads("size", "512", 1000), "512");
        assert_eq!(
            as_fio_reads("bssplit", "4k/50:8kb/50", 1000),
            "4000/50:8000/50"
        );
        assert_eq!(as_fio_reads("rw", "4k", 1000), "4k");
        assert!(kb_base(Some("10")).is_err() && unit_base("1").is_err());
    }
}
