//! Workload options: each workload describes its options and presets in one table
//! ([`WorkloadKind`]); one parser reads them from `-w KIND:PRESET,key=value,flag`, from a suite
//! file's `[[workload]]` table and writes the `--workload` help.
//!
//! The one rule: a preset, wherever it appears, supplies values; explicit keys override it in
//! any order; a key given twice is an error; options nobody gives take their default.

use std::fmt::Write as _;

use serde_json::Value as Json;

use fsbench_measure::error::invalid;
use fsbench_measure::units::parse_size;
use fsbench_model::units::compact_size;

/// How an option's value is written.
#[derive(Debug)]
pub enum OptKind {
    /// A non-negative integer (`k`, `m`, `g` multiply by powers of 1024).
    Count,
    /// Bytes, with a unit: `4k`, `1m`, `8G`.
    Size,
    /// Given bare (`direct`) to set it; `direct=false` clears it.
    Flag,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// Free text: a path.
    Text,
    /// Several values joined by `+` (a TOML array works too).
    List(&'static OptKind),
}

/// One row of a workload's option table.
#[derive(Debug)]
pub struct OptionDef {
    pub name: &'static str,
    /// Other spellings (fdtree's letters for tree).
    pub aliases: &'static [&'static str],
    pub kind: OptKind,
    /// What a number counts, for the help.
    pub unit: &'static str,
    /// Inclusive range of a number (of each element of a list).
    pub min: u64,
    pub max: u64,
    /// The value when neither a preset nor the user gives one.
    pub default: Option<&'static str>,
    pub help: &'static str,
}

impl OptionDef {
    /// A row with no aliases, unit, range or default; set those with struct update syntax.
    pub(crate) const fn new(name: &'static str, kind: OptKind, help: &'static str) -> OptionDef {
        OptionDef {
            name,
            aliases: &[],
            kind,
            unit: "",
            min: 0,
            max: u64::MAX,
            default: None,
            help,
        }
    }
}

/// A named set of option values, written as `key=value` as a user would.
#[derive(Debug)]
pub struct Preset {
    pub name: &'static str,
    pub values: &'static [(&'static str, &'static str)],
    pub help: &'static str,
}

impl Preset {
    /// Whether its values of `keys` are `value_of`'s, as written (`None`: the preset does not
    /// list the key), so that parameters written out in full are named as the preset.
    pub(crate) fn matches(&self, keys: &[&str], value_of: impl Fn(&str) -> Option<String>) -> bool {
        let listed = |key: &str| (self.values.iter()).find_map(|(k, v)| (*k == key).then_some(*v));
        (keys.iter()).all(|key| listed(key).map(str::to_string) == value_of(key))
    }
}

/// A workload's option table: its stable name (stored in databases; never change it), its
/// options, presets and aliases.
#[derive(Debug)]
pub struct WorkloadKind {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'static [OptionDef],
    pub presets: &'static [Preset],
    /// The preset used when none is given.
    pub default_preset: &'static str,
    /// The options that give a phase more work, for advice on phases too short to measure.
    pub more_work: &'static [&'static str],
    /// Other workload names that mean this one with a preset (`ffsb-large-write`).
    pub aliases: &'static [(&'static str, &'static str)],
}

/// A parsed option value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OptValue {
    Num(u64),
    Flag(bool),
    Text(String),
    List(Vec<OptValue>),
}

/// Where an option's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Default,
    Preset,
    Explicit,
}

/// A workload's options after parsing: every option's value (if it has one) and its origin.
#[derive(Debug)]
pub struct Parsed {
    pub kind: &'static WorkloadKind,
    pub preset: &'static Preset,
    values: Vec<Option<(OptValue, Origin)>>,
}

impl WorkloadKind {
    /// How to give the workload more work, naming only what it has: a larger preset where
    /// there are several, and its options that grow the work (`size=`, `threads=`).
    pub(crate) fn more_work_advice(&self) -> String {
        let keys: Vec<String> = self.more_work.iter().map(|k| format!("`{k}=`")).collect();
        let keys = keys.join(", ");
        if self.presets.len() > 1 {
            format!("a larger {} preset or larger {keys}", self.name)
        } else {
            format!("larger {keys}")
        }
    }

    /// Whether `key` names one of the options (`_` or `-`, or an alias).
    pub(crate) fn has_option(&self, key: &str) -> bool {
        self.option(key).is_some()
    }

    fn option(&self, key: &str) -> Option<usize> {
        let key = key.trim().replace('_', "-");
        self.options
            .iter()
            .position(|o| o.name == key || o.aliases.contains(&key.as_str()))
    }

    fn preset(&self, name: &str) -> anyhow::Result<&'static Preset> {
        // The tables are `'static`, so are their rows.
        let presets: &'static [Preset] = self.presets;
        presets
            .iter()
            .find(|p| p.name == name.trim())
            .ok_or_else(|| {
                let names: Vec<_> = presets.iter().map(|p| p.name).collect();
                invalid(format!(
                    "unknown {} preset `{}`{}: choose one of {}",
                    self.name,
                    name.trim(),
                    did_you_mean(&names, name.trim()),
                    names.join(", ")
                ))
            })
    }

    fn is_flag(&self, word: &str) -> bool {
        self.option(word)
            .is_some_and(|i| matches!(self.options[i].kind, OptKind::Flag))
    }

    /// Parses `value` as option `i`'s type and checks its range.
    fn value(&self, i: usize, value: &str) -> anyhow::Result<OptValue> {
        let def = &self.options[i];
        self.typed(def, &def.kind, value.trim())
    }

    fn typed(&self, def: &OptionDef, kind: &OptKind, text: &str) -> anyhow::Result<OptValue> {
        let (workload, key) = (self.name, def.name);
        let number = |n: u64| {
            if n < def.min || n > def.max {
                // The largest values of u32 and u64 are no limit worth stating.
                let range = if def.max >= u64::from(u32::MAX) {
                    format!("at least {}", def.min)
                } else {
                    format!("between {} and {}", def.min, def.max)
                };
                return Err(invalid(format!(
                    "{workload}: `{key}` must be {range}, got {n}"
                )));
            }
            Ok(OptValue::Num(n))
        };
        match kind {
            OptKind::Count => number(parse_size(text).map_err(|_| {
                invalid(format!(
                    "{workload}: `{key}`: `{text}` is not a non-negative integer"
                ))
            })?),
            OptKind::Size => {
                number(parse_size(text).map_err(|e| invalid(format!("{workload}: `{key}`: {e}")))?)
            }
            OptKind::Flag => match text {
                "" | "true" | "yes" | "1" => Ok(OptValue::Flag(true)),
                "false" | "no" | "0" => Ok(OptValue::Flag(false)),
                _ => Err(invalid(format!(
                    "{workload}: `{key}` is a flag: give it bare, or `{key}=true|false`"
                ))),
            },
            OptKind::Choice(words) => words
                .iter()
                .find(|w| **w == text)
                .map(|w| OptValue::Text(w.to_string()))
                .ok_or_else(|| {
                    invalid(format!(
                        "{workload}: `{key}` is one of {}; got `{text}`",
                        words.join(", ")
                    ))
                }),
            OptKind::Text if text.is_empty() => {
                Err(invalid(format!("{workload}: `{key}` needs a value")))
            }
            OptKind::Text => Ok(OptValue::Text(text.to_string())),
            OptKind::List(element) => text
                .split('+')
                .map(|item| self.typed(def, element, item.trim()))
                .collect::<anyhow::Result<_>>()
                .map(OptValue::List),
        }
    }

    fn unknown_key(&self, key: &str) -> anyhow::Error {
        let names: Vec<_> = self.options.iter().map(|o| o.name).collect();
        invalid(format!(
            "unknown {} option `{key}`{}: options are preset, {}",
            self.name,
            did_you_mean(&names, key),
            names.join(", ")
        ))
    }

    /// Applies the one rule to `(key, value)` pairs; `preset` is a key like the others.
    pub(crate) fn parse_pairs(&'static self, pairs: &[(String, String)]) -> anyhow::Result<Parsed> {
        let mut preset = None;
        let mut values: Vec<Option<(OptValue, Origin)>> = vec![None; self.options.len()];
        for (key, value) in pairs {
            if key.trim() == "preset" {
                let p = self.preset(value)?;
                if let Some(old) = preset.replace(p) {
                    return Err(invalid(format!(
                        "{}: two presets, `{}` and `{}`: give one",
                        self.name, old.name, p.name
                    )));
                }
                continue;
            }
            let i = self
                .option(key)
                .ok_or_else(|| self.unknown_key(key.trim()))?;
            if values[i].is_some() {
                return Err(invalid(format!(
                    "{}: `{}` is given twice",
                    self.name, self.options[i].name
                )));
            }
            values[i] = Some((self.value(i, value)?, Origin::Explicit));
        }
        let preset = match preset {
            Some(p) => p,
            None => self.preset(self.default_preset)?,
        };
        for (key, value) in preset.values {
            let i = self.option(key).expect("preset rows name options");
            if values[i].is_none() {
                values[i] = Some((self.value(i, value)?, Origin::Preset));
            }
        }
        for (i, def) in self.options.iter().enumerate() {
            if let (None, Some(default)) = (&values[i], def.default) {
                values[i] = Some((self.value(i, default)?, Origin::Default));
            }
        }
        Ok(Parsed {
            kind: self,
            preset,
            values,
        })
    }

    /// Parses the part after `KIND:`: `PRESET,key=value,flag` in any order.
    pub(crate) fn parse_cli(&'static self, args: &str) -> anyhow::Result<Parsed> {
        let pairs: Vec<(String, String)> = args
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| match item.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None if self.is_flag(item) => (item.to_string(), String::new()),
                None => ("preset".to_string(), item.to_string()),
            })
            .collect();
        self.parse_pairs(&pairs)
    }

    /// Parses a suite file's `[[workload]]` table (without `kind`).
    pub(crate) fn parse_map(
        &'static self,
        map: &serde_json::Map<String, Json>,
    ) -> anyhow::Result<Parsed> {
        let text = |key: &str, v: &Json| -> anyhow::Result<String> {
            Ok(match v {
                Json::String(s) => s.clone(),
                Json::Number(n) => n.to_string(),
                Json::Bool(b) => b.to_string(),
                Json::Array(items) if !items.iter().any(|i| i.is_array() || i.is_object()) => items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join("+"),
                _ => {
                    return Err(invalid(format!(
                        "{}: `{key}` must be a number, a string, true/false or a list",
                        self.name
                    )));
                }
            })
        };
        let pairs = map
            .iter()
            .map(|(k, v)| Ok((k.clone(), text(k, v)?)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        self.parse_pairs(&pairs)
    }

    /// Whether every key of a suite-file table is one of this workload's options.
    pub(crate) fn knows_all(&self, map: &serde_json::Map<String, Json>) -> bool {
        map.keys()
            .all(|k| k == "preset" || self.option(k).is_some())
    }

    /// The `--workload` help for this workload, from its table.
    pub(crate) fn help(&self) -> String {
        let mut out = format!(
            "{}:[PRESET,]KEY=VALUE,FLAG... — {}\n",
            self.name, self.summary
        );
        for p in self.presets {
            let values: Vec<String> = p.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let default = if p.name == self.default_preset {
                " (default)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  preset {}{default}: {} [{}]",
                p.name,
                p.help,
                values.join(",")
            );
        }
        for (alias, preset) in self.aliases {
            let _ = writeln!(out, "  `{alias}` is `{}:{preset}`", self.name);
        }
        for o in self.options {
            let kind = type_name(&o.kind);
            let mut line = format!("  {}{kind}: {}", o.name, o.help);
            for a in o.aliases {
                let _ = write!(line, "; also `{a}`");
            }
            if !o.unit.is_empty() {
                let _ = write!(line, "; in {}", o.unit);
            }
            if o.min > 0 || o.max < u64::MAX {
                let sized = matches!(o.kind, OptKind::Size | OptKind::List(OptKind::Size));
                let show = |n: u64| match (n, sized) {
                    (u64::MAX, _) => String::new(),
                    (n, true) => compact_size(n),
                    (n, false) => n.to_string(),
                };
                let _ = write!(line, "; {}..{}", show(o.min), show(o.max));
            }
            if let Some(d) = o.default {
                let _ = write!(line, "; default {d}");
            }
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

fn type_name(kind: &OptKind) -> String {
    match kind {
        OptKind::Count => "=N".into(),
        OptKind::Size => "=SIZE".into(),
        OptKind::Flag => String::new(),
        OptKind::Choice(words) => format!("={}", words.join("|")),
        OptKind::Text => "=TEXT".into(),
        OptKind::List(element) => format!("{}+...", type_name(element)),
    }
}

impl Parsed {
    fn slot(&self, name: &str) -> Option<&(OptValue, Origin)> {
        let i = self
            .kind
            .option(name)
            .unwrap_or_else(|| panic!("{}: no option `{name}` in its table", self.kind.name));
        self.values[i].as_ref()
    }

    /// Whether the user gave `name` (not a preset or a default).
    pub(crate) fn explicit(&self, name: &str) -> bool {
        self.slot(name).is_some_and(|s| s.1 == Origin::Explicit)
    }

    /// The first of `names` the user gave.
    pub(crate) fn first_explicit<'a>(&self, names: &[&'a str]) -> Option<&'a str> {
        names.iter().copied().find(|n| self.explicit(n))
    }

    /// A number; `None` if nothing set it.
    pub(crate) fn num(&self, name: &str) -> Option<u64> {
        match self.slot(name) {
            Some((OptValue::Num(n), _)) => Some(*n),
            _ => None,
        }
    }

    /// A number whose table range fits `u32`.
    pub(crate) fn small(&self, name: &str) -> Option<u32> {
        self.num(name)
            .map(|n| u32::try_from(n).expect("the option table's range fits u32"))
    }

    pub(crate) fn flag(&self, name: &str) -> bool {
        matches!(self.slot(name), Some((OptValue::Flag(true), _)))
    }

    pub(crate) fn text(&self, name: &str) -> Option<&str> {
        match self.slot(name) {
            Some((OptValue::Text(t), _)) => Some(t),
            _ => None,
        }
    }

    pub(crate) fn nums(&self, name: &str) -> Option<Vec<u64>> {
        match self.slot(name) {
            Some((OptValue::List(items), _)) => items
                .iter()
                .map(|v| match v {
                    OptValue::Num(n) => Some(*n),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    pub(crate) fn texts(&self, name: &str) -> Option<Vec<&str>> {
        match self.slot(name) {
            Some((OptValue::List(items), _)) => items
                .iter()
                .map(|v| match v {
                    OptValue::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }
}

/// ` (did you mean `NAME`?)` for the name of `names` nearest to the misspelt `word`, within
/// two edits; empty when none is that near.
pub(crate) fn did_you_mean(names: &[&str], word: &str) -> String {
    let close = (names.iter())
        .filter(|n| edit_distance(n, word) <= 2)
        .min_by_key(|n| edit_distance(n, word));
    close.map_or(String::new(), |n| format!(" (did you mean `{n}`?)"))
}

/// Levenshtein distance, for "did you mean".
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;
