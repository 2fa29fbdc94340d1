//! fio's latency histogram buckets (stat.c's `plat_val_to_idx` and `plat_idx_to_val`): 64
//! exact values, then 29 groups of 64 buckets each twice as wide as the group before, so a
//! value is known within 1/64 of itself. fio's percentiles, `bins` and histogram logs are in
//! these buckets; fsbench's finer histograms are put into them to print what fio prints.

use hdrhistogram::Histogram;

/// Bits of a bucket's index within its group.
const BITS: u32 = 6;
/// Buckets per group.
const VAL: u64 = 1 << BITS;
/// Every bucket: fio's FIO_IO_U_PLAT_NR.
pub const PLAT_NR: usize = 29 * VAL as usize;

/// The bucket of a value in nanoseconds.
#[inline]
pub fn plat_index(value: u64) -> usize {
    let msb = if value == 0 {
        0
    } else {
        63 - value.leading_zeros()
    };
    if msb <= BITS {
        return value as usize;
    }
    let error_bits = msb - BITS;
    let base = u64::from(error_bits + 1) << BITS;
    let offset = (VAL - 1) & (value >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The value fio gives a bucket: the middle of its range.
pub fn plat_value(index: usize) -> u64 {
    let index = index as u64;
    if index < (VAL << 1) {
        return index;
    }
    let error_bits = (index >> BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(BITS));
    let k = index % VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// A histogram's counts in fio's buckets (each recorded value's bucket by its midpoint).
pub fn buckets(h: &Histogram<u64>) -> Vec<u64> {
    let mut out = vec![0; PLAT_NR];
    for v in h.iter_recorded() {
        let mid = h.median_equivalent(v.value_iterated_to());
        out[plat_index(mid)] += v.count_at_value();
    }
    out
}

/// fio's percentiles of `buckets` (`calc_clat_percentiles`): for each of `list` (sorted),
/// the value of the first bucket at which the running count reaches it.
pub fn percentiles(buckets: &[u64], list: &[f64]) -> Vec<u64> {
    let total: u64 = buckets.iter().sum();
    let mut out = Vec::with_capacity(list.len());
    let mut sum = 0u64;
    let mut next = list.iter().peekable();
    for (i, n) in buckets.iter().enumerate() {
        sum += n;
        while let Some(p) = next.peek() {
            if !reached(sum, **p, total) {
                break;
            }
            out.push(plat_value(i));
            next.next();
        }
        if next.peek().is_none() {
            break;
        }
    }
    out
}

/// Whether `sum` of `total` reaches percentile `p`, exactly: fio compares in long double,
/// where 99.95% of 4000 is a little over 3998 (99.95 is not exact in binary), as here; in
/// double it would round to 3998.
fn reached(sum: u64, p: f64, total: u64) -> bool {
    // p = mantissa × 2^exponent exactly (a percentage: the exponent is negative); compare
    // sum × 100 ≥ p × total in integers.
    let bits = p.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) = match biased {
        0 => (fraction, -1074),
        b => (fraction | (1 << 52), b - 1075),
    };
    let lhs = u128::from(sum) * 100;
    let rhs = u128::from(mantissa) * u128::from(total);
    let shift = exponent.unsigned_abs();
    if exponent >= 0 || lhs.leading_zeros() <= shift {
        return sum as f64 >= p / 100.0 * total as f64;
    }
    (lhs << shift) >= rhs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What fio 3.33 printed for a 2 s randrw job (`--output-format=json+`): per direction
    /// the I/Os, then `bins` (bucket value:count), then the line of its percentiles.
    const FIO_OUTPUT: &str = include_str!("fio-3.33-bins.txt");

    #[test]
    fn buckets_and_percentiles_are_fio_s() {
        let lines: Vec<&str> = FIO_OUTPUT.lines().collect();
        for pair in lines.chunks(2) {
            let mut b = vec![0; PLAT_NR];
            for bin in pair[0].split(' ').skip(2) {
                let (value, count) = bin.split_once(':').unwrap();
                let value: u64 = value.parse().unwrap();
                // Every value fio gives a bucket is that bucket's own.
                assert_eq!(plat_value(plat_index(value)), value);
                b[plat_index(value)] += count.parse::<u64>().unwrap();
            }
            let theirs: Vec<u64> = pair[1].split(' ').map(|v| v.parse().unwrap()).collect();
            let list = [
                1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5,
                99.9, 99.95, 99.99,
            ];
            assert_eq!(percentiles(&b, &list), theirs);
        }
        assert_eq!(plat_index(100), 100);
        assert_eq!(plat_value(100), 100);
        assert_eq!(plat_index(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_are_the_first_bucket_reaching_each() {
        let mut b = vec![0; PLAT_NR];
        b[10] = 50;
        b[20] = 49;
        b[30] = 1;
        assert_eq!(
            percentiles(&b, &[1.0, 50.0, 50.5, 99.0, 99.5]),
            [10, 10, 20, 20, 30]
        );
    }
}
