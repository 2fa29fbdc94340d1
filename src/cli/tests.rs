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
