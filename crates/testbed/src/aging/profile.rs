//! Aging profiles: how a fresh filesystem is churned into an old one. The presets, a user's
//! TOML file, and the distributions they draw file sizes and directory depths from.

use std::path::Path;

use fsbench_measure::error::invalid;
use fsbench_model::aging::{AgeProfile, MAX_DIRS, OpWeights, SizeDist};

/// `age = ...`: no aging, a preset, or a profile file.
pub fn resolve(spec: &str) -> anyhow::Result<Option<AgeProfile>> {
    let profile = match spec {
        "none" | "" => return Ok(None),
        "light" => light(),
        "geriatrix-like" => geriatrix_like(),
        path if path.ends_with(".toml") || path.contains('/') => from_file(Path::new(path))?,
        other => {
            return Err(invalid(format!(
                "unknown aging profile `{other}`: use none, light, geriatrix-like or a TOML file (a path ending in .toml)"
            )));
        }
    };
    profile.validate()?;
    Ok(Some(profile))
}

/// `light`: quick enough for CI on a 256–512 MiB image. Grown to 90% full, thinned to half,
/// the capacity written once, files mostly 16 KiB–1 MiB (lognormal around 64 KiB), a shallow
/// tree of 32 directories.
fn light() -> AgeProfile {
    AgeProfile {
        name: "light".into(),
        seed: fsbench_model::aging::default_seed(),
        target_util_percent: 50.0,
        peak_util_percent: 90.0,
        write_multiple: 1.0,
        sizes: SizeDist::Hybrid {
            mu: (64.0f64 * 1024.0).ln(),
            sigma: 1.5,
            tail: 0.0,
            tail_alpha: fsbench_model::aging::default_alpha(),
            tail_min: fsbench_model::aging::default_tail_min(),
            max: 4 << 20,
        },
        dirs: 32,
        depth_mean: 1.5,
        max_depth: 4,
        ops: OpWeights::default(),
        write_block: fsbench_model::aging::default_write_block(),
    }
}

/// `geriatrix-like`: Geriatrix's recipe (Kadekodi et al., ATC '18) with the measured
/// distributions it ages towards (Agrawal et al., FAST '07, as Impressions, FAST '09, models
/// them): file sizes by count a lognormal body (μ = 9.48, σ = 2.46 in ln bytes, median
/// ≈ 13 KiB) with a Pareto tail (k = 0.91 from 512 MiB, 0.006% of the files), files spread
/// over a tree whose depth is Poisson (λ = 6.49 for files by namespace depth); aged to 70%
/// used after writing 5 × the capacity, the churn Geriatrix needs before the layout
/// stops changing much.
fn geriatrix_like() -> AgeProfile {
    AgeProfile {
        name: "geriatrix-like".into(),
        seed: fsbench_model::aging::default_seed(),
        target_util_percent: 70.0,
        peak_util_percent: 0.0,
        write_multiple: 5.0,
        sizes: SizeDist::Hybrid {
            mu: 9.48,
            sigma: 2.46,
            tail: 0.00006,
            tail_alpha: 0.91,
            tail_min: 512 << 20,
            max: 1 << 30,
        },
        dirs: 200,
        depth_mean: 6.49,
        max_depth: 12,
        ops: OpWeights {
            create: 5,
            append: 2,
            overwrite: 1,
            delete: 4,
        },
        write_block: fsbench_model::aging::default_write_block(),
    }
}

fn from_file(path: &Path) -> anyhow::Result<AgeProfile> {
    let text = fsbench_measure::calls::read_text_file(path, "aging profile")?;
    let mut profile: AgeProfile = toml::from_str(&text)
        .map_err(|e| invalid(format!("aging profile {}: {e}", path.display())))?;
    if profile.name.is_empty() {
        profile.name = path
            .file_stem()
            .map_or("profile".into(), |s| s.to_string_lossy().into_owned());
    }
    Ok(profile)
}

/// Checks of a profile's settings, which a user's file may get wrong.
pub(crate) trait AgeProfileExt {
    fn validate(&self) -> anyhow::Result<()>;
}

impl AgeProfileExt for AgeProfile {
    fn validate(&self) -> anyhow::Result<()> {
        let bad = |what: String| Err(invalid(format!("aging profile `{}`: {what}", self.name)));
        if !(self.target_util_percent > 0.0 && self.target_util_percent <= 95.0) {
            return bad(format!(
                "target_util_percent {} is not in (0, 95]",
                self.target_util_percent
            ));
        }
        let peak = self.peak_util_percent;
        if peak != 0.0 && !(peak >= self.target_util_percent && peak <= 95.0) {
            return bad(format!(
                "peak_util_percent {peak} is neither 0 nor in [target_util_percent, 95]"
            ));
        }
        if !(self.write_multiple >= 0.0 && self.write_multiple <= 1000.0) {
            return bad(format!(
                "write_multiple {} is not in [0, 1000]",
                self.write_multiple
            ));
        }
        if self.dirs == 0 || self.dirs > MAX_DIRS {
            return bad(format!("dirs {} is not in 1..={MAX_DIRS}", self.dirs));
        }
        if !(self.depth_mean >= 0.0 && self.depth_mean <= 64.0) || self.max_depth == 0 {
            return bad("depth_mean must be in [0, 64] and max_depth at least 1".into());
        }
        let w = self.ops;
        if w.create == 0 {
            return bad("the create weight must be positive (nothing else makes files)".into());
        }
        if self.write_block == 0 {
            return bad("write_block must be positive".into());
        }
        match &self.sizes {
            SizeDist::Hybrid {
                sigma,
                tail,
                tail_alpha,
                max,
                ..
            } if !(*sigma >= 0.0
                && (0.0..=1.0).contains(tail)
                && *tail_alpha > 0.0
                && *max > 0) =>
            {
                return bad("sizes: sigma ≥ 0, tail in [0, 1], tail_alpha > 0, max > 0".into());
            }
            SizeDist::Uniform { min, max } if min > max || *max == 0 => {
                return bad(format!("sizes: min {min} is above max {max}"));
            }
            SizeDist::Weighted { sizes } if sizes.iter().all(|(_, w)| *w == 0) => {
                return bad("sizes: no size has a weight".into());
            }
            _ => {}
        }
        Ok(())
    }
}

/// splitmix64: small, fast and stable, so a seed gives the same tree in every version.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n) (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Standard normal (Box–Muller; one of the pair is dropped to stay stateless).
    fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Poisson(λ) by Knuth's product method (λ here is small).
    pub(crate) fn poisson(&mut self, lambda: f64) -> u32 {
        let limit = (-lambda).exp();
        let (mut k, mut p) = (0u32, 1.0);
        loop {
            p *= self.unit();
            if p <= limit || k >= 1000 {
                return k;
            }
            k += 1;
        }
    }
}

/// Drawing from a distribution.
pub(crate) trait SizeDistExt {
    /// One file size, at most `cap` (and at least 1 byte).
    fn draw(&self, rng: &mut Rng, cap: u64) -> u64;
}

impl SizeDistExt for SizeDist {
    fn draw(&self, rng: &mut Rng, cap: u64) -> u64 {
        let size = match self {
            SizeDist::Hybrid {
                mu,
                sigma,
                tail,
                tail_alpha,
                tail_min,
                max,
            } => {
                let raw = if *tail > 0.0 && rng.unit() < *tail {
                    // Inverse CDF of Pareto: x_m / U^(1/α).
                    *tail_min as f64 / (1.0 - rng.unit()).powf(1.0 / tail_alpha)
                } else {
                    (mu + sigma * rng.normal()).exp()
                };
                (raw as u64).min(*max)
            }
            SizeDist::Uniform { min, max } => min + rng.below(max - min + 1),
            SizeDist::Weighted { sizes } => {
                let total: u64 = sizes.iter().map(|(_, w)| u64::from(*w)).sum();
                let mut pick = rng.below(total.max(1));
                let mut chosen = sizes.last().map_or(0, |s| s.0);
                for (size, weight) in sizes {
                    if pick < u64::from(*weight) {
                        chosen = *size;
                        break;
                    }
                    pick -= u64::from(*weight);
                }
                chosen
            }
        };
        size.clamp(1, cap.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_resolve_and_validate() {
        assert_eq!(resolve("none").unwrap(), None);
        let light = resolve("light").unwrap().unwrap();
        assert_eq!(
            (light.peak_util_percent, light.target_util_percent),
            (90.0, 50.0)
        );
        let mut low = light.clone();
        low.peak_util_percent = 40.0;
        let e = low.validate().unwrap_err().to_string();
        assert!(e.contains("peak_util_percent 40"), "{e}");
        let g = resolve("geriatrix-like").unwrap().unwrap();
        assert_eq!((g.target_util_percent, g.write_multiple), (70.0, 5.0));
        let e = resolve("ancient").unwrap_err().to_string();
        assert!(e.contains("ancient") && e.contains("geriatrix-like"), "{e}");
    }

    #[test]
    fn a_toml_profile_reads_and_bad_values_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.toml");
        std::fs::write(
            &path,
            "target_util_percent = 60\nwrite_multiple = 2\ndirs = 10\n\
             [sizes]\nkind = \"uniform\"\nmin = \"4k\"\nmax = \"1m\"\n",
        )
        .unwrap();
        let p = resolve(path.to_str().unwrap()).unwrap().unwrap();
        assert_eq!(p.name, "old");
        assert_eq!(
            p.sizes,
            SizeDist::Uniform {
                min: 4096,
                max: 1 << 20
            }
        );
        std::fs::write(
            &path,
            "target_util_percent = 99\n[sizes]\nkind = \"uniform\"\nmin = 1\nmax = 2\n",
        )
        .unwrap();
        let e = resolve(path.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("target_util_percent 99"), "{e}");
        std::fs::write(&path, "target_util_percent = 50\nbogus = 1\n").unwrap();
        let e = resolve(path.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn the_hybrid_distribution_has_its_median_and_cap() {
        let g = geriatrix_like();
        let mut rng = Rng::new(1);
        let mut sizes: Vec<u64> = (0..20_001)
            .map(|_| g.sizes.draw(&mut rng, 64 << 20))
            .collect();
        sizes.sort_unstable();
        let median = sizes[10_000] as f64;
        // e^9.48 ≈ 13,100 bytes.
        assert!((10_000.0..17_000.0).contains(&median), "{median}");
        assert!(sizes.iter().all(|s| (1..=64 << 20).contains(s)));
    }

    #[test]
    fn the_same_seed_draws_the_same_numbers() {
        let (mut a, mut b) = (Rng::new(5), Rng::new(5));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        let mean = (0..10_000).map(|_| a.poisson(6.49) as f64).sum::<f64>() / 1e4;
        assert!((6.2..6.8).contains(&mean), "{mean}");
    }
}
