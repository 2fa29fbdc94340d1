//! Workloads' notes on their phases, each said once: runs whose note differs only in its
//! figures ("the 8.7 GiB written fit in RAM", "the 6.0 GiB written …") share one line that
//! gives the figures' range and how many runs it covers.

use super::fit::View;
use fsbench_model::results::RunRecord;

/// `text` with every number replaced by `#`: the notes one line stands for share it (and
/// the console says each skeleton once per suite).
pub fn skeleton(text: &str) -> String {
    let mut out = String::new();
    let mut at = 0;
    for (start, end) in numbers(text) {
        out.push_str(&text[at..start]);
        out.push('#');
        at = end;
    }
    out + &text[at..]
}

/// Where the numbers of `text` are (digits, with the decimal points and thousands
/// separators between them), in order.
fn numbers(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len()
            && (bytes[i].is_ascii_digit()
                || (matches!(bytes[i], b'.' | b',')
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)))
        {
            i += 1;
        }
        Some((start, i))
    })
}

/// One line for notes of the same skeleton: the first note's words, each number that varies
/// given as its range (`6.0–8.7`), in the order the numbers appear.
fn merged(texts: &[String]) -> String {
    let first = &texts[0];
    let spans: Vec<(usize, usize)> = numbers(first).collect();
    let values: Vec<Vec<&str>> = texts
        .iter()
        .map(|t| numbers(t).map(|(a, b)| &t[a..b]).collect())
        .collect();
    let mut out = String::new();
    let mut at = 0;
    for (k, &(start, end)) in spans.iter().enumerate() {
        out.push_str(&first[at..start]);
        let parse = |v: &str| v.replace(',', "").parse::<f64>().ok();
        let here = values.iter().filter_map(|v| v.get(k).copied());
        let low = here
            .clone()
            .min_by(|a, b| parse(a).partial_cmp(&parse(b)).unwrap());
        let high = here.max_by(|a, b| parse(a).partial_cmp(&parse(b)).unwrap());
        match (low, high) {
            (Some(low), Some(high)) if low != high => out.push_str(&format!("{low}–{high}")),
            _ => out.push_str(&first[start..end]),
        }
        at = end;
    }
    out.push_str(&first[at..]);
    out
}

/// The notes of `runs`' phases (and what a phase did not support or had nothing to do), one
/// line per phase and note skeleton, naming the configurations and counting the runs.
pub(crate) fn render(out: &mut String, runs: &[&RunRecord], view: &View) {
    let mut notes: Vec<Said> = Vec::new();
    for run in runs {
        for p in &run.phases {
            let unsupported = p.unsupported.iter().map(|u| format!("unsupported: {u}"));
            let idle = p.idle.iter().map(|i| format!("nothing to measure ({i})"));
            for n in p.notes.iter().cloned().chain(unsupported).chain(idle) {
                let key = skeleton(&n);
                let said = match notes
                    .iter_mut()
                    .position(|s| s.phases[0] == p.name && s.key == key)
                {
                    Some(i) => &mut notes[i],
                    None => {
                        notes.push(Said {
                            phases: vec![p.name.clone()],
                            key,
                            texts: Vec::new(),
                            configs: Vec::new(),
                            runs: 0,
                        });
                        notes.last_mut().expect("just pushed")
                    }
                };
                if !said.configs.contains(&run.config.as_str()) {
                    said.configs.push(&run.config);
                }
                if !said.texts.contains(&n) {
                    said.texts.push(n);
                }
                said.runs += 1;
            }
        }
    }
    for s in across_phases(notes) {
        let runs = if s.runs > 1 {
            format!(" ({} runs)", s.runs)
        } else {
            String::new()
        };
        let line = format!(
            "note: {} · {}: {}{runs}",
            s.configs.join(", "),
            s.phases.join(", "),
            merged(&s.texts)
        );
        out.push_str(&view.item(0, &line));
    }
}

/// One line for what several phases said alike, in the same configurations and runs (a
/// filesystem that supports none of a workload's attribute phases says why once, not four
/// times).
fn across_phases(notes: Vec<Said<'_>>) -> Vec<Said<'_>> {
    let mut lines: Vec<Said> = Vec::new();
    for s in notes {
        let alike = lines.iter_mut().find(|l| {
            (&l.key, &l.texts, &l.configs, l.runs) == (&s.key, &s.texts, &s.configs, s.runs)
        });
        match alike {
            Some(line) => line.phases.extend(s.phases),
            None => lines.push(s),
        }
    }
    lines
}

/// The notes of one phase (or of several, alike) that share a skeleton: their texts, the
/// configurations and how many runs said one of them.
struct Said<'a> {
    phases: Vec<String>,
    key: String,
    texts: Vec<String>,
    configs: Vec<&'a str>,
    runs: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_that_differ_in_their_figures_are_one_line_with_ranges() {
        let texts = [
            "the 8.7 GiB written fit in the 23.5 GiB of RAM: write throughput is the cache's",
            "the 6.0 GiB written fit in the 23.5 GiB of RAM: write throughput is the cache's",
            "the 12.25 GiB written fit in the 23.5 GiB of RAM: write throughput is the cache's",
        ]
        .map(String::from);
        assert!(texts.iter().all(|t| skeleton(t) == skeleton(&texts[0])));
        assert_ne!(skeleton("1,024 files"), skeleton("no files"));
        assert_eq!(
            merged(&texts),
            "the 6.0–12.25 GiB written fit in the 23.5 GiB of RAM: write throughput is the cache's"
        );
        assert_eq!(merged(&texts[..1]), texts[0]);
    }

    #[test]
    fn a_note_said_alike_by_several_phases_is_one_line_naming_them() {
        let said = |phase: &str, text: &str, config| Said {
            phases: vec![phase.to_string()],
            key: skeleton(text),
            texts: vec![text.to_string()],
            configs: vec![config],
            runs: 2,
        };
        let why = "unsupported: no user.* attributes";
        let lines = across_phases(vec![
            said("set", why, "ext4"),
            said("get", why, "ext4"),
            said("get", why, "xfs"),
            said("list", "unsupported: another reason", "ext4"),
            said("remove", why, "ext4"),
        ]);
        let named: Vec<(Vec<String>, &str)> = lines
            .iter()
            .map(|l| (l.phases.clone(), l.configs[0]))
            .collect();
        assert_eq!(
            named,
            [
                (vec!["set".into(), "get".into(), "remove".into()], "ext4"),
                (vec!["get".into()], "xfs"),
                (vec!["list".into()], "ext4"),
            ]
        );
    }
}
