//! A run's filesystem aged and filled before its phases: on loop images once per
//! configuration, kept as a template image that every run gets a copy of; on a device (or
//! tmpfs) before every run, since there is nothing to copy.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use super::Resolved;
use super::observer::{Observer, PreparationStart};
use super::phases::PhaseSettings;
use crate::aging::image::{self, TemplateInfo};
use crate::aging::{self, Plan, Preparation, digest, probe, profile};
use crate::results::{ConfigKey, WorkloadKey};
use crate::suite::{FsConfig, Suite};
use crate::testbed::{FreshFs, Target};
use crate::units::format_bytes;
use crate::workload::{SpaceNeed, WorkloadSpec};

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
fn plan(config: &FsConfig, spec: &WorkloadSpec) -> anyhow::Result<Plan> {
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

/// The templates of a suite, made on first use.
#[derive(Default)]
pub(crate) struct Preparer {
    templates: HashMap<(ConfigKey, Option<WorkloadKey>), Template>,
}

/// What a run is: its configuration, keys, workload and label, and where it reports.
pub(crate) struct RunSpec<'a> {
    pub(crate) resolved: &'a Resolved,
    pub(super) keys: (ConfigKey, WorkloadKey),
    pub(crate) spec: &'a WorkloadSpec,
    pub(crate) settings: &'a PhaseSettings,
    pub(crate) label: &'a str,
}

impl Preparer {
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

    /// The configuration's template, made (aged, filled, probed, checked, kept) if it does
    /// not exist yet.
    fn template(
        &mut self,
        target: &mut Target,
        run: &RunSpec,
        plan: &Plan,
        observer: &mut dyn Observer,
    ) -> anyhow::Result<&mut Template> {
        let (config, tools) = run.resolved;
        let key = (run.keys.0, run.spec.age_profile().map(|_| run.keys.1));
        if !self.templates.contains_key(&key) {
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
            let path = target.template_path(self.templates.len());
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
            });
            observer.preparation_finished(run.label, Some(&prep));
            let template = Template {
                path,
                prep,
                mkfs_secs,
                mkfs_command,
                used: false,
            };
            self.templates.insert(key, template);
        }
        Ok(self.templates.get_mut(&key).expect("made above"))
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
                "{} before this run (no image to copy on a device or tmpfs: every run is prepared again)",
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

/// `aging (light) and filling to 50%`.
fn describe(plan: &Plan) -> String {
    let mut parts = Vec::new();
    if let Some(age) = &plan.age {
        parts.push(format!(
            "aging ({}: {:.0}% used, {}× its size written)",
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
