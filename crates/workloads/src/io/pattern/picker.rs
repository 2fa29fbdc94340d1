//! A skewed or uniform pick of one block (or file) among `n`: fio's distributions.

use serde::{Deserialize, Serialize};

use super::Rng;
use crate::io::params::Distribution;

/// fio's scramble of a skewed block number, so that the hot blocks are spread over the file
/// rather than packed at its start.
#[inline]
fn hash(v: u64) -> u64 {
    let mut x = v.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 29;
    x.wrapping_mul(0xbf58_476d_1ce4_e5b9)
}

/// A skewed or uniform pick of one block among `n`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Picker {
    Uniform,
    /// Gray et al.'s zipf generator, as fio's lib/zipf.c.
    Zipf {
        theta: f64,
        zetan: f64,
        alpha: f64,
        eta: f64,
        offset: u64,
    },
    Pareto {
        power: f64,
        offset: u64,
    },
    Normal {
        sigma: f64,
    },
    Zoned(crate::io::params::Zones),
}

/// fio computes zeta over at most this many blocks (ZIPF_MAX_GEN), for its setup time.
const ZIPF_MAX: u64 = 10_000_000;

impl Picker {
    pub(super) fn new(d: Distribution, n: u64, rng: &mut Rng) -> Picker {
        match d {
            Distribution::Random => Picker::Uniform,
            Distribution::Zipf(theta) => {
                let zeta = |k: u64| (1..=k).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
                let zetan = zeta(n.min(ZIPF_MAX));
                let zeta2 = zeta(2);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                Picker::Zipf {
                    theta,
                    zetan,
                    alpha: 1.0 / (1.0 - theta),
                    eta,
                    offset: rng.next(),
                }
            }
            Distribution::Pareto(h) => Picker::Pareto {
                power: h.ln() / (1.0 - h).ln(),
                offset: rng.next(),
            },
            Distribution::Normal(pct) => Picker::Normal {
                sigma: pct / 100.0 * n as f64,
            },
            Distribution::Zoned(zones) => Picker::Zoned(zones),
        }
    }

    #[inline]
    pub(super) fn pick(&self, n: u64, rng: &mut Rng) -> u64 {
        match *self {
            Picker::Uniform => rng.below(n),
            Picker::Zipf {
                theta,
                zetan,
                alpha,
                eta,
                offset,
            } => {
                let u = rng.unit();
                let z = u * zetan;
                let v = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                hash(v - 1).wrapping_add(offset) % n
            }
            Picker::Pareto { power, offset } => {
                let v = ((n - 1) as f64 * (1.0 - rng.unit()).powf(power)) as u64;
                hash(v).wrapping_add(offset) % n
            }
            Picker::Normal { sigma } => {
                // Irwin–Hall: twelve uniforms less six is close to a standard normal.
                let g: f64 = (0..12).map(|_| rng.unit()).sum::<f64>() - 6.0;
                let v = n as f64 / 2.0 + g * sigma;
                (v.max(0.0) as u64).min(n - 1)
            }
            Picker::Zoned(ref zones) => {
                // A zone by its share of the accesses, then a block within it.
                let mut roll = rng.below(100) as u8;
                let mut last = (0, 0);
                for (access, first, len) in zones.each(n) {
                    last = (first, len);
                    if roll < access {
                        break;
                    }
                    roll -= access;
                }
                last.0 + rng.below(last.1)
            }
        }
    }
}
