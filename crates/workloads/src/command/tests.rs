use super::*;
use crate::Params;

fn spec(text: &str) -> anyhow::Result<Params> {
    let suite: toml::Table = toml::from_str(text).expect("valid TOML");
    let value = serde_json::to_value(&suite).expect("JSON");
    Params::of(&serde_json::from_value(value["workload"][0].clone())?)
}

#[test]
fn a_suite_table_with_phase_tables_is_the_command_workload() {
    let spec = spec(
        r#"[[workload]]
kind = "command"
setup = "mkdir src, dst"
phase = [{name = "copy", run = "cp -r src dst", items = 12}, {name = "count", run = "ls", items_cmd = "echo 3"}]
timeout = 60
space = "64M""#,
    )
    .unwrap();
    let p: &CommandParams = spec.get().unwrap();
    assert_eq!(p.setup.as_deref(), Some("mkdir src, dst"));
    assert_eq!(p.phase[0].items, Some(12));
    assert_eq!(p.space, 64 << 20);
    assert_eq!(spec.label(), "command:copy+count");
    let phases = spec.phases();
    assert!(phases[0].has_rate && phases[1].has_rate);
    // Stored and read back as it was.
    let stored = serde_json::to_value(spec.spec()).unwrap();
    let back = Params::of(&serde_json::from_value(stored).unwrap()).unwrap();
    assert_eq!(back, spec);
}

#[test]
fn a_damaged_phase_table_is_named() {
    let e = spec(
        r#"[[workload]]
kind = "command"
phase = [{name = "copy", rnu = "cp"}]"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("command") && e.contains("rnu"), "{e}");
}

#[test]
fn bad_phases_are_refused_with_reasons() {
    let flags = |phases: &[&str]| {
        let phases: Vec<String> = phases.iter().map(|p| p.to_string()).collect();
        CommandParams::from_flags(None, &phases, None, None, None)
            .unwrap_err()
            .to_string()
    };
    assert!(flags(&[]).contains("at least one"));
    assert!(flags(&["a=true", "a=false"]).contains("given twice"));
    assert!(flags(&["lifecycle=true"]).contains("reserved"));
    assert!(flags(&["two words=true"]).contains("letters"));
    assert!(flags(&["noequals"]).contains("NAME=COMMAND"));
    assert!(flags(&["a= "]).contains("empty"));
}

#[test]
fn without_a_file_the_preset_is_the_tar_demo() {
    let spec = Params::parse("command:timeout=60").unwrap();
    let p: &CommandParams = spec.get().unwrap();
    assert_eq!(spec.label(), "command:tar");
    assert_eq!(p.timeout, 60);
    assert_eq!(p.phase.len(), 3);
}
