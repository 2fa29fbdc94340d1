//! Options tried before anything is measured: each configuration that sets mkfs or mount
//! options is made and mounted once on the target before the suite starts, so that options
//! mkfs or the kernel refuse end it at once, with the kernel's own reason, and nothing is
//! measured or kept (no harness ceiling first, no failed suite in `list`).

use super::configs::Resolved;
use fsbench_measure::error::{FsbenchError, invalid};
use fsbench_testbed::testbed::Target;
use fsbench_testbed::testbed::kmsg::MountRefused;

/// Makes and mounts each configuration with options once, then undoes it.
pub(crate) fn try_options(target: &mut Target, configs: &[Resolved]) -> anyhow::Result<()> {
    if !target.spec().makes_filesystems() {
        return Ok(());
    }
    let mut tried: Vec<&str> = Vec::new();
    for (config, tools) in configs {
        let plain = config.mount.is_empty() && config.mkfs.is_empty();
        if plain || tried.contains(&config.label.as_str()) {
            continue;
        }
        tried.push(&config.label);
        let made = target.fresh(config, tools).and_then(|fresh| fresh.finish());
        let Err(e) = made else { continue };
        if matches!(e.downcast_ref(), Some(FsbenchError::Interrupted)) {
            return Err(e);
        }
        // The kernel's reason alone says it; else all that mkfs or mount said.
        let why = match e.downcast_ref::<MountRefused>() {
            Some(refused) => refused.to_string(),
            None => format!("{e:#}"),
        };
        return Err(invalid(format!(
            "--fs {}: {why} (tried on a fresh filesystem before the suite started: nothing \
             was measured or kept)",
            config.label
        )));
    }
    Ok(())
}
