//! fio's number formatting (lib/num2str.c) and its time and latency units, so that fsbench
//! prints `BW=1516MiB/s` where fio does (never `1GiB/s` for 1.48 GiB/s).

/// What follows the number and its prefix.
#[derive(Clone, Copy)]
pub(super) enum Unit {
    None,
    Byte,
    BytePerSec,
}

/// fio's `num2str(num, maxlen, 1, pow2, unit)`: at most `maxlen` characters of number
/// (the point counted), a prefix (k, M, … or Ki, Mi, … with `pow2`) and the unit. Like
/// fio's, it divides until the number fits, then shows what was divided away as decimals
/// where there is room, else rounds.
pub(super) fn num2str(num: u64, maxlen: usize, pow2: bool, unit: Unit) -> String {
    let prefixes: [&str; 7] = if pow2 {
        ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
    } else {
        ["", "k", "M", "G", "T", "P", "E"]
    };
    let unit = match unit {
        Unit::None => "",
        Unit::Byte => "B",
        Unit::BytePerSec => "B/s",
    };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let (mut num, mut post, mut modulo, mut carry) = (num, 0, None, false);
    while post < prefixes.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let Some(modulo) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let digits = num.to_string().len();
    if maxlen.saturating_sub(digits) <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefixes[post]);
    }
    let decimals = maxlen - digits - 1;
    let fraction = format!("{:.*}", decimals, modulo as f64 / thousand as f64);
    if fraction.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &fraction[2..], prefixes[post])
}

/// fio's significant figures (`sig_figs`, 4 by default).
pub(super) const SIG_FIGS: usize = 4;

/// A bandwidth in bytes per second as fio prints it: binary first, `1516MiB/s (1590MB/s)`.
pub(super) fn bandwidth(bytes_per_sec: u64) -> (String, String) {
    (
        num2str(bytes_per_sec, SIG_FIGS, true, Unit::BytePerSec),
        num2str(bytes_per_sec, SIG_FIGS, false, Unit::BytePerSec),
    )
}

/// fio's `display_lat` units: nanoseconds, or µs or ms where the values are large enough.
/// Returns the unit's name and its divisor.
pub(super) fn lat_unit(min: u64, max: u64, stdev: f64) -> (&'static str, u64) {
    if min > 2_000_000 && max > 99_999_999 && stdev > 1_000_000.0 {
        ("msec", 1_000_000)
    } else if min > 2000 && max > 99_999 && stdev > 1000.0 {
        ("usec", 1000)
    } else {
        ("nsec", 1)
    }
}

/// fio's unit of a percentile table from its smallest and largest value.
pub(super) fn percentile_unit(min: u64, max: u64) -> (&'static str, u64) {
    if min > 2_000_000 && max > 99_999_999 {
        ("msec", 1_000_000)
    } else if min > 2000 && max > 99_999 {
        ("usec", 1000)
    } else {
        ("nsec", 1)
    }
}

/// C's `%3.1f`-style percentage of `part` in `total` (fio's `stat_calc_dist`: a count that is
/// not zero shows at least `floor`).
pub(super) fn share(part: u64, total: u64, floor: f64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let pct = part as f64 / total as f64 * 100.0;
    if pct < floor && part > 0 { floor } else { pct }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_fio_s() {
        // What fio 3.33 printed for these.
        let cases = [
            (33_554_432, true, Unit::BytePerSec, "32.0MiB/s"),
            (33_700_000, false, Unit::BytePerSec, "33.7MB/s"),
            (1_048_576_000, true, Unit::BytePerSec, "1000MiB/s"),
            (1_049_000_000, false, Unit::BytePerSec, "1049MB/s"),
            (8_388_608, true, Unit::Byte, "8192KiB"),
            (8_388_608, false, Unit::Byte, "8389kB"),
            (8224, false, Unit::None, "8224"),
            (27_700, false, Unit::None, "27.7k"),
            (175_438, false, Unit::None, "175k"),
            (4096, true, Unit::Byte, "4096B"),
            (131_072, true, Unit::Byte, "128KiB"),
        ];
        for (n, pow2, unit, want) in cases {
            assert_eq!(num2str(n, SIG_FIGS, pow2, unit), want);
        }
        // 1.48 GiB/s: fio's own rounding gives 1516MiB/s, never 1GiB/s.
        let (binary, decimal) = bandwidth(1_589_137_899);
        assert_eq!(
            (binary.as_str(), decimal.as_str()),
            ("1516MiB/s", "1589MB/s")
        );
    }
}
