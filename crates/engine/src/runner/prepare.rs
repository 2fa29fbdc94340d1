//! A run's filesystem aged and filled before its phases: on loop images once per
//! configuration, kept as a template image that every run gets a copy of; on a device (or
//! tmpfs) before every run, since there is nothing to copy.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use anyhow::Context;

use super::configs::Resolved;
use super::observer::{Diagnostic, Observer, PreparationStart};
use super::phases::PhaseSettings;
use fsbench_model::aging::{Preparation, TemplateInfo};
use fsbench_model::config::FsConfig;
use fsbench_model::results::{ConfigKey, SuiteResult, WorkloadKey};
use fsbench_model::suite::Suite;
use fsbench_model::units::format_bytes;
use fsbench_testbed::aging::image;
use fsbench_testbed::aging::{self, Plan, digest, probe, profile};
use fsbench_testbed::testbed::{FreshFs, Target};
use fsbench_workloads::{Params, SpaceNeed};

/// Each configuration with the suite's aging profile where it names none, and once per fill
/// level of the suite (`ext4 @ 50%`) where it names no level of its own.
pub(super) fn expand(configs: Vec<Resolved>, suite: &Suite) -> Vec<Resolved> {
    let mut out = Vec::new();
    for (mut config, tools) in configs {
        if config.fs.is_none() {
            out.push((config, tools));
            continue;
        }
        if config.age.is_none() {
            config.age = suite.age.clone().filter(|a| a != "none");
        }
        if config.fill.is_some() || suite.fill.is_empty() {
            out.push((config, tools));
            continue;
        }
        for level in &suite.fill {
            let mut c = config.clone();
            c.fill = Some(*level);
            c.label = format!("{} @ {level}%", config.label);
            out.push((c, tools.clone()));
        }
    }
    out
}

/// How `config` is prepared for `spec`: the workload's own aging (FFSB's agefs) or the
/// configuration's, and its fill level.
fn plan(config: &FsConfig, spec: &Params) -> anyhow::Result<Plan> {
    let age = match spec.age_profile() {
        Some(own) => Some(own),
        None => config
            .age
            .as_deref()
            .map(profile::resolve)
            .transpose()?
            .flatten(),
    };
    Ok(Plan {
        age,
        fill_percent: config.fill,
        lacks: config.lacks(),
    })
}

/// The need loop images are sized by: room for the workloads at the fullest level asked for
/// (an explicit --image-size is taken as given, and levels it cannot hold are refused).
pub(super) fn sizing_need(need: SpaceNeed, configs: &[Resolved]) -> anyhow::Result<SpaceNeed> {
    let mut level: f64 = 0.0;
    for (config, _) in configs {
        let age = config
            .age
            .as_deref()
            .map(profile::resolve)
            .transpose()?
            .flatten();
        let plan = Plan {
            age,
            fill_percent: config.fill,
            lacks: Vec::new(),
        };
        level = level.max(plan.level_percent());
    }
    // What the workload cannot run without must fit beside the level; what it would use in
    // full (a set that shrinks to fit, as FFSB's large-write) need not.
    let room = (100.0 - level).max(5.0) / 100.0;
    Ok(SpaceNeed {
        ideal_bytes: need.ideal_bytes.max((need.bytes as f64 / room) as u64),
        ..need
    })
}

/// A template image and what was done to make it.
struct Template {
    path: PathBuf,
    prep: Preparation,
    mkfs_secs: Option<f64>,
    mkfs_command: Option<String>,
    /// A run has started from it (the first that does made it, as far as its record says).
    used: bool,
}

/// Which template: a configuration's, or a configuration's for one workload (one that ages
/// the filesystem itself, as FFSB's agefs).
type TemplateKey = (ConfigKey, Option<WorkloadKey>);

/// The templates of a suite, made on first use (or, resumed, taken from the earlier attempt).
#[derive(Default)]
pub(crate) struct Preparer {
    templates: HashMap<TemplateKey, Template>,
    /// What an earlier attempt of a resumed suite recorded of the templates it kept.
    earlier: HashMap<TemplateKey, Template>,
}

/// What a run is: its configuration, keys, workload and label, and where it reports.
pub(crate) struct RunSpec<'a> {
    pub(crate) resolved: &'a Resolved,
    pub(super) keys: (ConfigKey, WorkloadKey),
    pub(crate) spec: &'a Params,
    pub(crate) settings: &'a PhaseSettings,
    pub(crate) label: &'a str,
    /// Probe the free space after the phases, before the last unmount (`probe_after`).
    pub(crate) probe_after: bool,
    /// Set the scheduler on a loop image's backing disk too (`--sched-backing`).
    pub(crate) sched_backing: bool,
}

impl Preparer {
    /// A resumed suite's preparer: the templates its earlier attempt kept, as its last run
    /// of each recorded them (path, checksum, preparation) and the configuration's mkfs.
    pub(super) fn resuming(previous: &SuiteResult, workloads: &[Params]) -> Preparer {
        let mut earlier = HashMap::new();
        for run in &previous.runs {
            let Some(prep) = &run.preparation else {
                continue;
            };
            let Some(path) = prep.template.as_ref().and_then(|t| t.kept.clone()) else {
                continue;
            };
            let own = (workloads.get(run.workload_key.0 as usize))
                .is_some_and(|w| w.age_profile().is_some());
            let key = (run.config_key, own.then_some(run.workload_key));
            let info = previous.configurations.get(run.config_key.0 as usize);
            earlier.insert(
                key,
                Template {
                    path,
                    prep: Preparation {
                        tree_digest: None,
                        ..prep.clone()
                    },
                    mkfs_secs: None,
                    mkfs_command: info.and_then(|i| i.mkfs_command.clone()),
                    // Made by the earlier attempt: no run of this one made it.
                    used: true,
                },
            );
        }
        Preparer {
            earlier,
            ..Preparer::default()
        }
    }

    /// The template the earlier attempt kept for `key`, when its image is still there with
    /// the checksum its runs recorded; otherwise says why it is made again.
    fn reuse(
        &mut self,
        target: &mut Target,
        key: TemplateKey,
        label: &str,
        observer: &mut dyn Observer,
    ) -> Option<Template> {
        let earlier = self.earlier.remove(&key)?;
        let path = earlier.path.clone();
        let recorded = earlier.prep.template.as_ref().map(|t| t.checksum.clone());
        let outcome = (|| {
            if !path.exists() {
                anyhow::bail!("{} is gone", path.display());
            }
            // Its directory is this suite's now: removed or kept with the others.
            target.adopt_templates(&path)?;
            let found = image::checksum(&path)?;
            if Some(&found) != recorded.as_ref() {
                std::fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
                anyhow::bail!(
                    "{} has checksum {found}, not the {} its runs recorded",
                    path.display(),
                    recorded.as_deref().unwrap_or("none")
                );
            }
            Ok(())
        })();
        let diagnostic = Diagnostic::Template {
            label,
            reused: outcome.is_ok(),
            what: &match &outcome {
                Ok(()) => format!(
                    "{} (checksum {} as recorded)",
                    path.display(),
                    recorded.as_deref().unwrap_or_default()
                ),
                Err(e) => format!("{e:#}"),
            },
        };
        observer.diagnostic(&diagnostic);
        outcome.ok().map(|()| earlier)
    }

    /// Takes over the directories of the earlier attempt's templates that no run needed
    /// (their configurations' runs were all done), so that they go with this suite's.
    pub(super) fn adopt_unused(&mut self, target: &mut Target) {
        for (_, earlier) in self.earlier.drain() {
            if earlier.path.exists() {
                // Left for `fsbench clean` if another process holds it.
                let _ = target.adopt_templates(&earlier.path);
            }
        }
    }

    /// Why the run cannot be done at its configuration's level, with the numbers, or `None`
    /// when it can: a workload needing more space or inodes than preparing the filesystem
    /// left is refused, not run into ENOSPC. On loop images the template is made first and
    /// its free space is the answer; elsewhere the image size gives an estimate.
    pub(super) fn refusal(
        &mut self,
        target: &mut Target,
        run: &RunSpec,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<Option<String>> {
        let plan = plan(&run.resolved.0, run.spec)?;
        if plan.is_empty() {
            return Ok(None);
        }
        let need = run.spec.space_needed()?;
        let level = plan.level_percent();
        let (free, inodes) = if target.takes_templates(&run.resolved.0) {
            let t = self.template(target, run, &plan, observer)?;
            (t.prep.free_bytes, Some(t.prep.free_inodes))
        } else {
            (
                (target.image_size() as f64 * (100.0 - level) / 100.0) as u64,
                None,
            )
        };
        // A tenth of what is left goes to the filesystem's own metadata and reserve.
        let room = free / 10 * 9;
        let short_of_inodes = inodes.filter(|i| need.inodes > *i);
        Ok((need.bytes > room || short_of_inodes.is_some()).then(|| {
            let inodes = short_of_inodes.map_or(String::new(), |i| {
                format!(", and {} inodes where {} are free", need.inodes, i)
            });
            format!(
                "refused at {level:.0}% used: {} needs about {} where about {} is left{inodes} (use a larger --image-size)",
                run.spec.label(),
                format_bytes(need.bytes),
                format_bytes(room),
            )
        }))
    }

    /// The configuration's template: the one an interrupted attempt kept, or made (aged,
    /// filled, probed, checked, kept) if it does not exist yet.
    fn template(
        &mut self,
        target: &mut Target,
        run: &RunSpec,
        plan: &Plan,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<&mut Template> {
        let key = (run.keys.0, run.spec.age_profile().map(|_| run.keys.1));
        if !self.templates.contains_key(&key) {
            let label = &run.resolved.0.label;
            let template = match self.reuse(target, key, label, observer) {
                Some(kept) => kept,
                None => make_template(target, run, plan, key, observer)?,
            };
            return Ok(self.templates.entry(key).or_insert(template));
        }
        Ok(self.templates.get_mut(&key).expect("checked above"))
    }

    /// The run's filesystem: fresh, or aged and filled (a copy of the configuration's
    /// template on loop images, made now if need be).
    pub(super) fn fresh(
        &mut self,
        target: &mut Target,
        run: &RunSpec,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<(FreshFs, Option<Preparation>)> {
        let (config, tools) = run.resolved;
        let plan = plan(config, run.spec)?;
        if plan.is_empty() {
            return Ok((target.fresh(config, tools)?, None));
        }
        if !target.takes_templates(config) {
            let fs = config.fs.expect("aging needs a filesystem fsbench makes");
            let fresh = target.fresh(config, tools)?;
            let what = format!(
                "{} before this run (no image to copy on a device, tmpfs or zfs: every run is prepared again)",
                describe(&plan)
            );
            let mut prep = prepare(&fresh, &plan, &what, target.image_size(), run, observer)?;
            prep.in_place = true;
            if probe::native_needs_mount(fs) {
                prep.native
                    .extend(probe::native_view(fs, fresh.path(), Some(fresh.path())));
            }
            prep.tree_digest = digest::tree_digest(fresh.dir().as_fd())?.map(|d| d.0);
            observer.preparation_finished(run.label, Some(&prep));
            return Ok((fresh, Some(prep)));
        }
        let template = self.template(target, run, &plan, observer)?;
        let made_here = !std::mem::replace(&mut template.used, true);
        let (path, mut prep) = (template.path.clone(), template.prep.clone());
        let (mkfs_secs, mkfs_command) = (template.mkfs_secs, template.mkfs_command.clone());
        let mut fresh = target.fresh_from(config, tools, Some(&path))?;
        // The filesystem was made once, for the template, by the run that made it.
        fresh.mkfs_command = mkfs_command;
        fresh.mkfs_secs = mkfs_secs.filter(|_| made_here);
        if let (Some(t), Some((how, secs))) = (prep.template.as_mut(), fresh.copied) {
            t.made_here = made_here;
            t.copy = how.to_string();
            t.copy_secs = secs;
        }
        prep.tree_digest = digest::tree_digest(fresh.dir().as_fd())?.map(|d| d.0);
        Ok((fresh, Some(prep)))
    }
}

/// The template of `key`, made: `run`'s configuration made, aged and filled as `plan` says,
/// probed, checked and kept.
fn make_template(
    target: &mut Target,
    run: &RunSpec,
    plan: &Plan,
    key: TemplateKey,
    observer: &mut dyn Observer,
) -> anyhow::Result<Template> {
    let (config, tools) = run.resolved;
    let fs = config
        .fs
        .expect("templates are of filesystems fsbench makes");
    let fresh = target.fresh(config, tools)?;
    let (mkfs_secs, mkfs_command) = (fresh.mkfs_secs, fresh.mkfs_command.clone());
    let what = format!(
        "{} once for every run of {} (kept as a template image)",
        describe(plan),
        config.label
    );
    let mut prep = prepare(&fresh, plan, &what, target.image_size(), run, observer)?;
    if probe::native_needs_mount(fs) {
        prep.native
            .extend(probe::native_view(fs, fresh.path(), Some(fresh.path())));
    }
    let name = match key.1 {
        Some(w) => format!("template-c{}-w{}.img", key.0.0, w.0),
        None => format!("template-c{}.img", key.0.0),
    };
    let path = target.template_path(&name)?;
    let mut native = None;
    fresh.finish_as_template(&path, |dev| {
        if !probe::native_needs_mount(fs) {
            native = probe::native_view(fs, dev, None);
        }
    })?;
    prep.native.extend(native);
    prep.template = Some(TemplateInfo {
        checksum: image::checksum(&path)?,
        made_here: false,
        copy: String::new(),
        copy_secs: 0.0,
        kept: Some(path.clone()),
    });
    observer.preparation_finished(run.label, Some(&prep));
    Ok(Template {
        path,
        prep,
        mkfs_secs,
        mkfs_command,
        used: false,
    })
}

/// `aging (light) and filling to 50%`.
fn describe(plan: &Plan) -> String {
    let mut parts = Vec::new();
    if let Some(age) = &plan.age {
        let peak = Some(age.peak_util_percent)
            .filter(|p| *p > 0.0)
            .map_or(String::new(), |p| format!("{p:.0}% then "));
        parts.push(format!(
            "aging ({}: {peak}{:.0}% used, {}× its size written)",
            age.name, age.target_util_percent, age.write_multiple
        ));
    }
    if let Some(level) = plan.fill_percent.filter(|l| *l > 0) {
        parts.push(format!("filling to {level}%"));
    }
    parts.join(" and ")
}

/// Ages and fills the mounted `fresh`, telling `observer` (its progress in MiB written).
fn prepare(
    fresh: &FreshFs,
    plan: &Plan,
    what: &str,
    image_size: u64,
    run: &RunSpec,
    observer: &mut dyn Observer,
) -> anyhow::Result<Preparation> {
    let (settings, label) = (run.settings, run.label);
    let written = plan
        .age
        .as_ref()
        .map_or(0.0, |a| a.write_multiple.max(a.target_util_percent / 100.0))
        + f64::from(plan.fill_percent.unwrap_or(0)) / 100.0;
    settings.progress.done.store(0, Ordering::Relaxed);
    observer.preparation_started(&PreparationStart {
        label,
        what,
        expected_mib: (written * image_size as f64) as u64 >> 20,
        progress: &settings.progress,
    });
    let outcome = aging::prepare(fresh.dir().as_fd(), plan, &settings.progress);
    if outcome.is_err() {
        observer.preparation_finished(label, None);
    }
    Ok(outcome?)
}
