//! A TOML suite file as the suite it describes: its tables read, its configurations and
//! workloads in the form results keep.

use std::path::Path;

use super::fs_option::configs_from_tables;
use fsbench_measure::error::invalid;
use fsbench_model::filesystem::FsType;
use fsbench_model::suite::Suite;
use fsbench_model::workload::WorkloadSpec;
use fsbench_workloads::Params;

/// Reads a suite file; its name defaults to the file's stem.
pub fn read_suite(path: &Path) -> anyhow::Result<Suite> {
    let text = fsbench_measure::calls::read_text_file(path, "suite file")?;
    let mut suite =
        parse_suite(&text).map_err(|e| invalid(format!("suite file {}: {e:#}", path.display())))?;
    if suite.name == Suite::default().name
        && let Some(stem) = path.file_stem()
    {
        suite.name = stem.to_string_lossy().into_owned();
    }
    Ok(suite)
}

/// A suite file's text as its suite.
pub fn parse_suite(text: &str) -> anyhow::Result<Suite> {
    let mut table: toml::Table = toml::from_str(text)?;
    // `runs = "auto"`: the runs become the cap of `[auto_runs]` (its defaults without one).
    let auto = table.get("runs").and_then(|r| r.as_str()) == Some("auto");
    if auto {
        table.remove("runs");
        table
            .entry("auto_runs")
            .or_insert_with(|| toml::Table::new().into());
    }
    let drivers_given = table.contains_key("driver");
    user_drivers_into_configs(&mut table);
    if let Some(toml::Value::Array(configs)) = table.get_mut("config") {
        configs_from_tables(configs, text, drivers_given)?;
    }
    // The table has lost where each value was; parsing the text again names the line and
    // key (where that finds the same error: it reads the configurations unconverted).
    let mut suite: Suite =
        table
            .try_into()
            .map_err(|e: toml::de::Error| match toml::from_str::<Suite>(text) {
                Err(located) if located.span().is_some() && located.message() == e.message() => {
                    invalid(located.to_string())
                }
                _ => invalid(e.to_string()),
            })?;
    // Options become the parameters' own fields, as a database keeps them.
    for (i, w) in suite.workloads.iter_mut().enumerate() {
        *w = Params::of(w)
            .map_err(|e| invalid(format!("[[workload]] {}: {e:#}", i + 1)))?
            .spec();
    }
    if let Some(a) = suite.auto_runs.clone() {
        suite.set_auto_runs(a);
    }
    Ok(suite)
}

/// The workloads every default `fsbench run` uses.
pub fn default_workloads() -> Vec<WorkloadSpec> {
    ["tree:default"]
        .iter()
        .map(|w| Params::parse(w).expect("built-in presets parse").spec())
        .collect()
}

/// Gives each `[[config]]` whose `fs` names a `[[driver]]` that driver's table (`fs` becomes
/// `"user"`), so that the configuration carries its driver.
fn user_drivers_into_configs(table: &mut toml::Table) {
    let Some(toml::Value::Array(drivers)) = table.get("driver").cloned() else {
        return;
    };
    let Some(toml::Value::Array(configs)) = table.get_mut("config") else {
        return;
    };
    for config in configs.iter_mut().filter_map(|c| c.as_table_mut()) {
        let fs = config
            .get("fs")
            .and_then(|f| f.as_str())
            .map(str::to_string);
        let named = |d: &&toml::Value| d.get("name").and_then(|n| n.as_str()) == fs.as_deref();
        if let Some(driver) = drivers.iter().find(named) {
            config.insert("fs".into(), FsType::User.name().into());
            config.insert("driver".into(), driver.clone());
        }
    }
}
