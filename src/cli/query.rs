//! The commands that read the results database: list, show, export, compare, rank, report.

use super::output::write_output;
use super::*;

/// Loads the suites that `specs` (ID or ID:CONFIG) name, and the columns they select.
pub(super) fn load_columns(
    store: &Store,
    specs: &[String],
) -> anyhow::Result<(Vec<SuiteResult>, Vec<Column>)> {
    let mut suites: Vec<SuiteResult> = Vec::new();
    let mut columns = Vec::new();
    for spec in specs {
        let id_text = spec.split_once(':').map_or(spec.as_str(), |(id, _)| id);
        let id: i64 = id_text
            .parse()
            .map_err(|_| invalid(format!("`{spec}`: expected a suite ID or ID:CONFIG")))?;
        if !suites.iter().any(|s| s.id == Some(id)) {
            suites.push(store.load(id)?);
        }
        let suite = suites
            .iter()
            .find(|s| s.id == Some(id))
            .expect("just loaded");
        for c in compare::columns(spec, suite)? {
            if !columns
                .iter()
                .any(|o: &Column| o.suite_id == c.suite_id && o.config == c.config)
            {
                columns.push(c);
            }
        }
    }
    if columns.is_empty() {
        return Err(invalid(
            "nothing to compare: the suites have no configurations",
        ));
    }
    Ok((suites, columns))
}

pub(super) fn compare_cmd(args: &CompareArgs, store: &Store) -> anyhow::Result<ExitCode> {
    let (suites, mut columns) = load_columns(store, &args.columns)?;
    if let Some(b) = &args.baseline {
        let (_, wanted) = load_columns(store, std::slice::from_ref(b))?;
        let pos = columns
            .iter()
            .position(|c| c.suite_id == wanted[0].suite_id && c.config == wanted[0].config)
            .ok_or_else(|| {
                invalid(format!(
                    "--baseline {b} is not among the compared configurations"
                ))
            })?;
        let base = columns.remove(pos);
        columns.insert(0, base);
    }
    if !(args.noise >= 0.0 && args.noise.is_finite()) {
        return Err(invalid("--noise must be a non-negative percentage"));
    }
    let comparison = compare::compare(&suites, &columns, 0, args.noise);
    let stack_warnings = crate::report::stack::compare_warnings(&suites, &columns);
    match args.output_format {
        OutputFormat::Table => {
            let mut text = report::compare::render(&columns, &comparison);
            for w in &stack_warnings {
                text.push_str(&format!("! {w}\n"));
            }
            write_stdout(&text)?
        }
        OutputFormat::Json => write_stdout(
            &(serde_json::to_string_pretty(&serde_json::json!({
                "schema_version": crate::results::SCHEMA_VERSION,
                "columns": columns,
                "stack_warnings": stack_warnings,
                "noise_percent": comparison.noise_percent,
                "alpha": comparison.alpha,
                "corrections": comparison.families,
                "rows": comparison.rows,
                "answers": comparison.answers(),
            }))? + "\n"),
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The commands that read the results database.
pub(super) fn query(command: &Command, db: &Path) -> anyhow::Result<ExitCode> {
    if !db.exists() {
        return Err(invalid(format!(
            "no results database at {}; run `fsbench run` first or pass --db",
            db.display()
        )));
    }
    let store = Store::open(db)?;
    match command {
        Command::List { limit } => {
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
            t.set_header([
                "ID",
                "Started",
                "Name",
                "Filesystems",
                "Workloads",
                "Runs",
                "Status",
            ]);
            for s in store.list(*limit)? {
                t.add_row(vec![
                    s.id.to_string(),
                    // To the minute, as a person reads it: 2026-11-23 06:00.
                    s.started_at.replace('T', " ").chars().take(16).collect(),
                    s.name,
                    s.configurations.join(", "),
                    s.workloads.join(", "),
                    format!("{}/{}", s.runs_done, s.runs_planned),
                    s.status,
                ]);
            }
            // Wrapped to the terminal's width; a pipe gets the full lines.
            t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
            write_stdout(&format!("{t}\n"))?;
        }
        Command::Show {
            id,
            all,
            output_format,
        } => print_result(&store.load(*id)?, *output_format, *all)?,
        Command::Compare(args) => return compare_cmd(args, &store),
        Command::Rank {
            columns,
            equal_footing,
            per_workload,
        } => {
            use crate::stats::rank::{Placing, rank};
            let (suites, columns) = load_columns(&store, columns)?;
            let placing = if *equal_footing {
                Placing::EqualFooting
            } else {
                Placing::Significance
            };
            let ranking = rank(&suites, columns, placing);
            let mut text = String::new();
            if *per_workload {
                for workload in ranking.workloads() {
                    let family = ranking.of_workload(workload);
                    text.push_str(&format!(
                        "== {workload} ==\n{}\n",
                        report::rank::render(&family)
                    ));
                }
                text.push_str("== All workloads ==\n");
            }
            text.push_str(&report::rank::render(&ranking));
            write_stdout(&text)?;
        }
        Command::Export { id, format, output } => {
            let result = store.load(*id)?;
            write_output(output.as_deref(), &output::export_text(&result, *format)?)?;
        }
        Command::Report(args) => {
            let (suites, columns) = load_columns(&store, &args.columns)?;
            let html = report::html::render(&suites, &columns, args.noise);
            write_output(Some(&args.output), &html)?;
            if args.output != Path::new("-") {
                eprintln!("fsbench: report written to {}", args.output.display());
            }
        }
        Command::Run(_)
        | Command::Ffsb(_)
        | Command::Fio(_)
        | Command::Fdtree(_)
        | Command::Clean
        | Command::Archive { .. } => {
            unreachable!("handled in main")
        }
    }
    Ok(ExitCode::SUCCESS)
}
