//! Every `fsbench ...` command line in the README's and the book's shell examples parses as
//! written, so the documentation cannot name a command or an option that does not exist.

use std::path::{Path, PathBuf};

use clap::Parser;

use super::Cli;

/// The Markdown files a reader is shown: the README, ARCHITECTURE.md and the book's chapters.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut dirs = vec![root.join("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files
}

/// The logical lines of the `sh` code blocks of a Markdown text: continuation lines joined,
/// comments dropped.
fn shell_lines(markdown: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_shell = false;
    let mut pending = String::new();
    for line in markdown.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match fence {
            Some(lang) if !in_shell => in_shell = lang.trim() == "sh",
            Some(_) => in_shell = false,
            None if in_shell => {
                let code = strip_comment(line);
                match code.trim_end().strip_suffix('\\') {
                    Some(head) => pending.push_str(head),
                    None => {
                        pending.push_str(&code);
                        lines.push(std::mem::take(&mut pending));
                    }
                }
            }
            None => {}
        }
    }
    lines
}

/// `line` without a shell comment: a `#` that starts a word outside quotes.
fn strip_comment(line: &str) -> String {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return line[..i].to_string(),
            _ => {}
        }
        previous = c;
    }
    line.to_string()
}

/// The fsbench command lines of a shell line: each command of a list or pipeline whose
/// program is fsbench (`fsbench`, `target/release/fsbench`, after `mpirun -np 4`), its
/// redirections dropped.
fn fsbench_commands(line: &str) -> Vec<Vec<String>> {
    let Some(words) = shlex::split(line) else {
        panic!("not a shell line: {line}");
    };
    let mut commands = Vec::new();
    for command in words.split(|w| ["&&", "||", ";", "|"].contains(&w.as_str())) {
        let program = command
            .iter()
            // Not an environment assignment naming the binary (`FSBENCH=target/release/fsbench`).
            .position(|w| w == "fsbench" || (w.ends_with("/fsbench") && !w.contains('=')));
        if let Some(start) = program {
            let args = command[start..]
                .iter()
                .take_while(|w| !w.starts_with('>') && !w.starts_with("2>"))
                .cloned();
            commands.push(args.collect());
        }
    }
    commands
}

#[test]
fn every_fsbench_command_line_in_the_documentation_parses() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("a document is readable");
        for line in shell_lines(&text) {
            // The MPI options exist only in a build with MPI.
            if line.contains("mpirun") && !cfg!(feature = "mpi") {
                continue;
            }
            for args in fsbench_commands(&line) {
                checked += 1;
                if let Err(e) = Cli::try_parse_from(&args) {
                    failures.push(format!("{}: {line}\n{e}", file.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 50, "only {checked} command lines found");
}

#[test]
fn shell_lines_are_read_as_a_shell_reads_them() {
    let markdown = "```sh\nfsbench run --fs ext4 \\\n    -w tree # comment\n```\n\
                    ```toml\nfsbench = 1\n```\n";
    assert_eq!(
        shell_lines(markdown),
        ["fsbench run --fs ext4     -w tree "]
    );
    assert_eq!(
        fsbench_commands("cd x && fsbench capture -o 't#1' -- tar -x > out"),
        [["fsbench", "capture", "-o", "t#1", "--", "tar", "-x"]]
    );
    assert_eq!(strip_comment("a 'b # c' # d"), "a 'b # c' ");
}

#[test]
fn a_command_line_with_an_unknown_option_fails() {
    assert!(Cli::try_parse_from(["fsbench", "run", "--fs", "ext4"]).is_ok());
    assert!(Cli::try_parse_from(["fsbench", "run", "--filesystem", "ext4"]).is_err());
}
