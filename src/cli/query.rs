//! The commands that read the results database: list, show, export, compare, rank, report.

use super::output::write_output;
use super::*;

/// Stored suite `id`, what its records say worked out.
pub(super) fn load(store: &Store, id: i64) -> anyhow::Result<SuiteResult> {
    let mut result = store.load(id, Params::label_of)?;
    summarize(&mut result)?;
    Ok(result)
}

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
            suites.push(load(store, id)?);
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
        let pos = baseline_position(store, &columns, b)?;
        let base = columns.remove(pos);
        columns.insert(0, base);
    }
    if !(args.noise >= 0.0 && args.noise.is_finite()) {
        return Err(invalid("--noise must be a non-negative percentage"));
    }
    let comparison = compare::compare(&suites, &columns, 0, args.noise);
    let stack_warnings = fsbench_report::stack::compare_warnings(&suites, &columns);
    match args.output_format {
        CompareFormat::Table => {
            let width = fsbench_report::fit::View::terminal(false).width;
            let mut text =
                fsbench_report::compare::render(&columns, &comparison, width, args.details);
            for w in &stack_warnings {
                text.push_str(&fsbench_report::fit::wrap(&format!("! {w}"), width, 0, 2));
            }
            for line in fsbench_report::crash::column_lines(&suites, &columns) {
                text.push_str(&fsbench_report::fit::wrap(&line, width, 0, 2));
            }
            write_stdout(&text)?
        }
        CompareFormat::Json => write_stdout(
            &(serde_json::to_string_pretty(&serde_json::json!({
                "schema_version": fsbench_model::results::SCHEMA_VERSION,
                "columns": columns,
                "stack_warnings": stack_warnings,
                "noise_percent": comparison.noise_percent,
                "alpha": comparison.alpha,
                "corrections": comparison.families,
                "rows": comparison.rows,
                "answers": comparison.answers(),
                "crash_safety": fsbench_report::crash::column_lines(&suites, &columns),
            }))? + "\n"),
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Where `--baseline` is among the compared `columns`: given as ID:CONFIG, or as a
/// configuration's label alone (`xfs`) where one compared column has it.
fn baseline_position(store: &Store, columns: &[Column], given: &str) -> anyhow::Result<usize> {
    let by_label: Vec<usize> = (0..columns.len())
        .filter(|&i| columns[i].config == given)
        .collect();
    let by_id = || -> anyhow::Result<usize> {
        let (_, wanted) = load_columns(store, &[given.to_string()])?;
        (columns.iter())
            .position(|c| c.suite_id == wanted[0].suite_id && c.config == wanted[0].config)
            .ok_or_else(|| {
                invalid(format!(
                    "--baseline {given} is not among the compared configurations"
                ))
            })
    };
    match by_label.as_slice() {
        [one] => Ok(*one),
        [] if given.starts_with(|c: char| c.is_ascii_digit()) => by_id(),
        [] => {
            let labels: Vec<String> = columns.iter().map(|c| c.name(columns)).collect();
            Err(invalid(format!(
                "--baseline {given}: no compared configuration has that label; they are: {}",
                labels.join(", ")
            )))
        }
        several => {
            let specs: Vec<String> = (several.iter())
                .map(|&i| format!("{}:{}", columns[i].suite_id, columns[i].config))
                .collect();
            Err(invalid(format!(
                "--baseline {given}: {} compared suites have it; name one: {}",
                several.len(),
                specs.join(", ")
            )))
        }
    }
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
        Command::List { limit, .. } => {
            let width = fsbench_report::fit::View::terminal(false).width;
            write_stdout(&list_text(&store.list(*limit, Params::label_of)?, width))?;
        }
        Command::Show {
            id,
            all,
            output_format,
            ..
        } => print_result(&load(&store, *id)?, *output_format, *all)?,
        Command::Compare(args) => return compare_cmd(args, &store),
        Command::Rank {
            columns,
            equal_footing,
            per_workload,
            group,
            weight,
            ..
        } => rank_cmd(
            &store,
            columns,
            *equal_footing,
            *per_workload,
            group,
            weight,
        )?,
        Command::Export {
            id, format, output, ..
        } => {
            let result = load(&store, *id)?;
            write_output(output.as_deref(), &output::export_text(&result, *format)?)?;
        }
        Command::Report(args) => {
            let (suites, columns) = load_columns(&store, &args.columns)?;
            let html = fsbench_report::html::render(&suites, &columns, args.noise);
            write_output(Some(&args.output), &html)?;
            if args.output != Path::new("-") {
                super::console::say(&format!(
                    "fsbench: report written to {}",
                    args.output.display()
                ));
            }
        }
        Command::Run(_)
        | Command::Ffsb(_)
        | Command::Fio(_)
        | Command::Filebench(_)
        | Command::Fdtree(_)
        | Command::Clean
        | Command::Capture(_)
        | Command::Archive { .. }
        | Command::Generate { .. }
        | Command::Crash(_)
        | Command::CrashRecorder(_) => {
            unreachable!("handled in main")
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `fsbench rank`: the columns' ranking, per workload and per group where asked, then over
/// all workloads.
fn rank_cmd(
    store: &Store,
    columns: &[String],
    equal_footing: bool,
    per_workload: bool,
    group: &[String],
    weight: &[String],
) -> anyhow::Result<()> {
    use fsbench_stats::rank::{Placing, rank};
    let (suites, columns) = load_columns(store, columns)?;
    let placing = if equal_footing {
        Placing::EqualFooting
    } else {
        Placing::Significance
    };
    let safety = fsbench_report::crash::column_lines(&suites, &columns);
    let ranking = rank(&suites, columns, placing).weighted(&weights(weight)?)?;
    let width = fsbench_report::fit::View::terminal(false).width;
    let mut text = String::new();
    if per_workload {
        for workload in ranking.workloads() {
            let family = ranking.of_workload(workload);
            text.push_str(&format!(
                "== {workload} ==\n{}\n",
                fsbench_report::ranking::render(&family, width)
            ));
        }
    }
    for (name, members) in groups(&ranking, group)? {
        text.push_str(&format!(
            "== {name} ==\n{}\n",
            fsbench_report::ranking::render(&ranking.of_workloads(&members), width)
        ));
    }
    if per_workload || !group.is_empty() {
        text.push_str("== All workloads ==\n");
    }
    text.push_str(&fsbench_report::ranking::render(&ranking, width));
    for line in safety {
        text.push_str(&fsbench_report::fit::wrap(&line, width, 0, 2));
    }
    write_stdout(&text)
}

/// The suites as a table; on a terminal too narrow for it, one block per suite whose lists
/// wrap between their items, never inside a name.
pub(super) fn list_text(suites: &[fsbench_store::SuiteListing], width: Option<u16>) -> String {
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
    // To the minute, as a person reads it: 2026-11-23 06:00.
    let started = |s: &fsbench_store::SuiteListing| -> String {
        s.started_at.replace('T', " ").chars().take(16).collect()
    };
    for s in suites {
        t.add_row(vec![
            s.id.to_string(),
            started(s),
            s.name.clone(),
            s.configurations.join(", "),
            s.workloads.join(", "),
            format!("{}/{}", s.runs_done, s.runs_planned),
            s.status.clone(),
        ]);
    }
    let Some(width) = width.filter(|w| fsbench_report::fit::rendered_width(&t) > usize::from(*w))
    else {
        return format!("{t}\n");
    };
    let mut out = String::new();
    for s in suites {
        let mut head = format!(
            "#{} {} · {} · {}/{} runs",
            s.id,
            started(s),
            s.status,
            s.runs_done,
            s.runs_planned,
        );
        // A name given; the default one is the two lines below.
        if s.name != fsbench_model::suite::what_on_what(&s.workloads, &s.configurations) {
            head.push_str(" · ");
            head.push_str(&s.name);
        }
        out.push_str(&fsbench_report::fit::wrap(&head, Some(width), 0, 4));
        for items in [&s.configurations, &s.workloads] {
            // Non-breaking spaces inside an item keep it whole when the line wraps.
            let joined: Vec<String> = items.iter().map(|i| i.replace(' ', "\u{a0}")).collect();
            out.push_str(&fsbench_report::fit::wrap(
                &joined.join(", "),
                Some(width),
                4,
                6,
            ));
        }
    }
    out
}

/// `--weight PHASE=W` options as (phase, weight) pairs.
fn weights(options: &[String]) -> anyhow::Result<Vec<(String, f64)>> {
    (options.iter())
        .map(|option| {
            let (phase, weight) = fsbench_measure::units::name_value(option)
                .and_then(|(p, w)| Some((p, w.trim().parse::<f64>().ok()?)))
                .ok_or_else(|| {
                    invalid(format!(
                        "--weight {option}: expected PHASE=W, a phase's name and a number"
                    ))
                })?;
            Ok((phase.trim().to_string(), weight))
        })
        .collect()
}

/// `--group NAME=WORKLOAD` options as named groups of the ranking's workloads, in the order
/// first named.
fn groups<'a>(
    ranking: &'a fsbench_stats::rank::Ranking,
    options: &[String],
) -> anyhow::Result<Vec<(String, Vec<&'a str>)>> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    for option in options {
        let Some((name, member)) = fsbench_measure::units::name_value(option) else {
            return Err(invalid(format!(
                "--group {option}: expected NAME=WORKLOAD (a workload's label or kind)"
            )));
        };
        let members = ranking.members(member)?;
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, have)) => {
                for m in members {
                    if !have.contains(&m) {
                        have.push(m);
                    }
                }
            }
            None => out.push((name.to_string(), members)),
        }
    }
    Ok(out)
}
