//! Reports of a suite's results: terminal tables, JSON, and fdtree's own format.

pub mod charts;
pub mod compare;
pub mod csv;
pub mod fdtree;
pub mod ffsb;
pub mod html;
pub mod iozone;
pub mod json;
pub mod matrix;
pub mod rank;
pub mod stack;
pub mod table;

/// A figure with a precision that suits its size: 0.0123, 1.234, 12.35, 1,234.5.
pub fn figure(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    // Beyond what digits can show (the bounds of wide intervals): an exponent.
    if a >= 1e15 || (a > 0.0 && a < 1e-9) {
        format!("{v:.2e}")
    } else if a >= 1000.0 {
        let rounded = format!("{v:.1}");
        let (int, frac) = rounded.split_once('.').unwrap_or((&rounded, "0"));
        let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
        format!(
            "{sign}{}.{frac}",
            crate::units::group_thousands(digits.parse().unwrap_or(0))
        )
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 0.01 || a == 0.0 {
        format!("{v:.3}")
    } else {
        // Three significant digits without an exponent: 0.00442.
        let decimals = (2.0 - a.log10().floor()).min(12.0) as usize;
        format!("{v:.decimals$}")
    }
}

#[cfg(test)]
mod tests {
    use super::figure;

    #[test]
    fn figures_read_at_a_glance() {
        assert_eq!(figure(0.5123), "0.512");
        assert_eq!(figure(12.345), "12.35");
        assert_eq!(figure(342.9), "342.9");
        assert_eq!(figure(70889.8), "70,889.8");
        assert_eq!(figure(-1234.5), "-1,234.5");
        assert_eq!(figure(0.0), "0.000");
        assert_eq!(figure(0.004423), "0.00442");
        assert_eq!(figure(0.0000123), "0.0000123");
        assert_eq!(figure(f64::NAN), "-");
        assert_eq!(figure(1.5e42), "1.50e42");
        assert_eq!(figure(2.0e-12), "2.00e-12");
    }
}
