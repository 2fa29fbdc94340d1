//! The man pages and shell completions `fsbench generate` makes name every command and
//! option that `--help` shows, so neither can drift from the command line.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// A command's path below `fsbench` (`[]`, `["run"]`, `["archive", "generate"]`) and what
/// its `--help` lists: its subcommands and its options, each as its flags (`-w, --workload`).
type HelpTree = BTreeMap<Vec<String>, (Vec<String>, Vec<String>)>;

fn help_tree() -> HelpTree {
    let state = tempdir();
    let mut tree = HelpTree::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let out = run(fsbench(state.path()).args(&path).arg("--help"));
        assert!(
            out.status.success(),
            "{path:?} --help: {}",
            text(&out.stderr)
        );
        let help = text(&out.stdout);
        let commands = section(&help, "Commands:")
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|c| c != "help")
            .collect::<Vec<_>>();
        let options = section(&help, "Options:")
            .filter_map(option_flags)
            .collect::<Vec<_>>();
        for c in &commands {
            todo.push([path.clone(), vec![c.clone()]].concat());
        }
        tree.insert(path, (commands, options));
    }
    tree
}

/// The entry lines of a section of `--help` (`Commands:`, `Options:`): indented at most six
/// columns, so a description's wrapped lines (indented further) are not taken for entries.
fn section<'a>(help: &'a str, title: &str) -> impl Iterator<Item = &'a str> {
    help.lines()
        .skip_while(move |l| *l != title)
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .filter(|l| {
            let indent = l.len() - l.trim_start().len();
            (1..=6).contains(&indent)
        })
}

/// `-w, --workload` of `  -w, --workload <WORKLOAD>  Workloads...`; `--fs` of `--fs <CONFIG>`.
fn option_flags(line: &str) -> Option<String> {
    let line = line.trim_start();
    if !line.starts_with('-') {
        return None;
    }
    let flags = line
        .split([' ', '='])
        .take_while(|w| w.starts_with('-'))
        .collect::<Vec<_>>()
        .join(" ");
    Some(flags.trim_end_matches(',').to_string())
}

#[test]
fn the_help_tree_is_read_whole() {
    let tree = help_tree();
    let (top, _) = &tree[&Vec::new()];
    for c in ["run", "compare", "archive", "capture"] {
        assert!(top.iter().any(|t| t == c), "top-level commands: {top:?}");
    }
    let (_, run_options) = &tree[&vec!["run".to_string()]];
    for o in ["-w, --workload", "--fs", "--db", "-h, --help"] {
        assert!(run_options.iter().any(|t| t == o), "run: {run_options:?}");
    }
    let (_, fdtree_options) = &tree[&vec!["fdtree".to_string()]];
    assert!(
        fdtree_options.iter().any(|t| t == "-C"),
        "{fdtree_options:?}"
    );
    assert!(tree.contains_key(&vec!["archive".to_string(), "generate".to_string()]));
}

/// `man -l PAGE` as a reader sees it, wide enough that no option line wraps.
fn render_man(page: &Path) -> String {
    let out = run(Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(page)
        .env("MANWIDTH", "200")
        .env("LC_ALL", "C.UTF-8"));
    assert!(
        out.status.success(),
        "man -l {}: {}",
        page.display(),
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn man_pages_render_and_name_every_command_and_option_help_shows() {
    if !has_tool("man") {
        skip("man pages: man is not installed (scripts/install-deps.sh installs man-db)");
        return;
    }
    let dir = tempdir();
    let out = run(fsbench(dir.path())
        .args(["generate", "man"])
        .arg(dir.path().join("man1")));
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (path, (commands, options)) in help_tree() {
        let name = ["fsbench".to_string()]
            .iter()
            .chain(&path)
            .cloned()
            .collect::<Vec<_>>();
        let page = dir
            .path()
            .join("man1")
            .join(format!("{}.1", name.join("-")));
        let rendered = render_man(&page);
        assert!(
            rendered.contains(&format!("{} - ", name.join("-"))),
            "{} does not name its command",
            page.display()
        );
        let lines = rendered.lines().map(str::trim_start).collect::<Vec<_>>();
        for flags in &options {
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with(&format!("{flags} ")) || l == flags),
                "{}: no entry for `{flags}`",
                page.display()
            );
        }
        for c in &commands {
            let sub = format!("{}-{c}(1)", name.join("-"));
            assert!(rendered.contains(&sub), "{}: no `{sub}`", page.display());
        }
    }
    // Found as `man fsbench` finds it once the pages are installed in a man directory.
    let found = run(Command::new("man")
        .args(["-w", "fsbench"])
        .env("MANPATH", dir.path()));
    assert_eq!(
        text(&found.stdout).trim(),
        dir.path().join("man1/fsbench.1").display().to_string(),
        "{}",
        text(&found.stderr)
    );
}

/// The words of the `opts="..."` line of a command's case in clap's bash completion script.
fn bash_opts<'a>(script: &'a str, path: &[String]) -> Vec<&'a str> {
    let case = ["fsbench"]
        .into_iter()
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("__subcmd__")
        + ")";
    let mut lines = script.lines().skip_while(|l| l.trim() != case);
    let opts = lines
        .find_map(|l| l.trim().strip_prefix("opts=\""))
        .unwrap_or_else(|| panic!("no case `{case}` with opts in the bash script"));
    opts.trim_end_matches('"').split_whitespace().collect()
}

#[test]
fn completions_name_every_command_and_option_help_shows() {
    let state = tempdir();
    let script = |shell: &str| {
        let out = run(fsbench(state.path()).args(["generate", "completions", shell]));
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let bash = script("bash");
    let others = ["zsh", "fish", "elvish", "powershell"].map(script);
    for (path, (commands, options)) in help_tree() {
        let opts = bash_opts(&bash, &path);
        let flags = options.iter().flat_map(|f| f.split(", "));
        for word in flags.chain(commands.iter().map(String::as_str)) {
            assert!(
                opts.contains(&word),
                "bash, {path:?}: no `{word}` in {opts:?}"
            );
            let bare = word.trim_start_matches('-');
            for (shell, s) in ["zsh", "fish", "elvish", "powershell"].iter().zip(&others) {
                assert!(s.contains(bare), "{shell}: no `{word}` of {path:?}");
            }
        }
    }
}

#[test]
fn bash_completes_run_options_and_subcommands() {
    if !has_tool("bash") {
        skip("bash completion: bash is not installed");
        return;
    }
    let state = tempdir();
    let script = state.path().join("fsbench.bash");
    let out = run(fsbench(state.path()).args(["generate", "completions", "bash"]));
    std::fs::write(&script, &out.stdout).unwrap();
    // What bash's completion does on Tab: the function the script registers, called with
    // the words typed so far.
    let complete = |words: &str| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _fsbench fsbench \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        let out = run(Command::new("bash").args(["--norc", "-c", &program]));
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let replies = complete("fsbench ru");
    assert_eq!(replies.lines().collect::<Vec<_>>(), ["run"]);
    let replies = complete("fsbench run --image-");
    assert_eq!(
        replies.lines().collect::<Vec<_>>(),
        ["--image-dir", "--image-size"]
    );
}

#[test]
fn generate_refuses_what_it_cannot_do_and_stores_nothing() {
    fails_with(
        &["generate", "completions", "tcsh"],
        2,
        "invalid value 'tcsh'",
    );
    fails_with(
        &["--db", "x.db", "generate", "completions", "bash"],
        2,
        "stores nothing in the results database",
    );
    let dir = tempdir();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "kept").unwrap();
    let out = run(fsbench(dir.path()).args(["generate", "man"]).arg(&file));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot make"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
}
