//! The command line's own definition.

use clap::CommandFactory;

use super::Cli;

/// Every argument and option of every command says what it is for in `--help`.
#[test]
fn every_argument_has_help() {
    fn check(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in command.get_subcommands() {
            check(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    check(&Cli::command(), "fsbench", &mut missing);
    assert!(missing.is_empty(), "without help: {missing:?}");
}

/// The default run (no workload, no suite file, no --runs) rounds until its figures are
/// precise or its time budget would run out; anything the user chose stays as chosen.
#[test]
fn the_default_run_has_auto_runs_with_a_time_cap() {
    use clap::Parser;
    use fsbench_model::suite::{AutoRuns, DEFAULT_MAX_SECS};
    let auto = |args: &[&str]| -> Option<AutoRuns> {
        let argv = ["fsbench", "run", "--dir", "/tmp"].iter().chain(args);
        let Cli {
            command: super::Command::Run(run),
            ..
        } = Cli::try_parse_from(argv).expect("parses")
        else {
            unreachable!("a run")
        };
        run.suite().expect("a suite").auto_runs
    };
    assert_eq!(auto(&[]).and_then(|a| a.max_secs), Some(DEFAULT_MAX_SECS));
    assert_eq!(
        auto(&["--max-time", "60s"]).and_then(|a| a.max_secs),
        Some(60.0)
    );
    assert_eq!(auto(&["--runs", "4"]), None);
    assert_eq!(auto(&["-w", "tree:quick"]), None);
}

/// `list` on a narrow terminal: blocks whose lines fit and never break inside a label.
#[test]
fn list_fits_80_columns_without_breaking_a_name() {
    let suite = fsbench_store::SuiteListing {
        id: 12,
        started_at: "2026-11-23T06:00:12Z".into(),
        name: "a suite with a rather long name".into(),
        status: "completed".into(),
        configurations: ["ext4", "xfs:mkfs=-m crc=1", "btrfs", "tmpfs (existing dir)"]
            .map(String::from)
            .to_vec(),
        workloads: [
            "tree:quick",
            "archive:small",
            "iozone:quick",
            "ffsb-large-write",
        ]
        .map(String::from)
        .to_vec(),
        runs_done: 9,
        runs_planned: 48,
    };
    let text = super::query::list_text(std::slice::from_ref(&suite), Some(40));
    assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
    for name in suite.configurations.iter().chain(&suite.workloads) {
        let whole = name.replace(' ', "\u{a0}");
        assert!(text.contains(&whole), "`{name}` broken: {text}");
    }
    assert!(text.contains("· a suite with a rather long"), "{text}");
    // The default name is not said again above its configurations and workloads.
    let default = fsbench_model::suite::what_on_what(&suite.workloads, &suite.configurations);
    let unnamed = fsbench_store::SuiteListing {
        name: default.clone(),
        ..suite.clone()
    };
    let card = super::query::list_text(std::slice::from_ref(&unnamed), Some(40));
    assert!(
        card.starts_with("#12 2026-11-23 06:00 · completed"),
        "{card}"
    );
    assert!(!card.contains(" on ext4"), "{card}");
    assert_eq!(card.matches("tree:quick").count(), 1, "{card}");
    // A pipe gets the table.
    assert!(super::query::list_text(&[suite], None).contains('┆'));
}

/// `--runs` says what a bare run does, with the numbers the default suite uses.
#[test]
fn runs_help_states_the_default_runs_budget() {
    use clap::CommandFactory;
    let cli = Cli::command();
    let run = cli.find_subcommand("run").expect("run");
    let runs = (run.get_arguments())
        .find(|a| a.get_id() == "runs")
        .expect("--runs");
    let help = runs
        .get_help()
        .expect("help")
        .to_string()
        .replace('\n', " ");
    let budget = format!(
        "up to {} rounds within about {} minutes",
        fsbench_model::suite::AutoRuns::default().max_runs,
        fsbench_model::suite::DEFAULT_MAX_SECS / 60.0
    );
    assert!(help.contains(&budget), "{help}");
}
