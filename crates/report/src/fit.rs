//! Terminal tables that fit the terminal's width: a table too wide is turned round
//! (configurations down instead of across) when that fits, and otherwise its cells wrap
//! (comfy-table's dynamic arrangement). Without a width (stdout is not a terminal, or
//! Markdown) a table keeps its full, stable layout.

use comfy_table::{CellAlignment, ColumnConstraint, ContentArrangement, Table, Width, presets};

/// Where the tables go: a terminal, or a Markdown document (`fsbench export --format markdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Terminal,
    Markdown,
}

pub(super) fn new_table(style: Style, header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_style(match style {
        Style::Terminal => presets::UTF8_FULL_CONDENSED,
        Style::Markdown => presets::ASCII_MARKDOWN,
    });
    t.set_header(header);
    t
}

pub(super) fn right_align(t: &mut Table) {
    for i in 1..t.column_count() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
}

impl Style {
    /// A line of a list: indented for a terminal, a (nested) Markdown list item otherwise.
    pub(super) fn item(self, level: usize, text: &str) -> String {
        let indent = "  ".repeat(level);
        match self {
            Style::Terminal => format!("{indent}{text}\n"),
            Style::Markdown => format!("{indent}- {}\n", text.replace('`', "'")),
        }
    }

    pub(super) fn heading(self, text: &str) -> String {
        match self {
            Style::Terminal => format!("\n== {text} ==\n"),
            Style::Markdown => format!("\n## {text}\n\n"),
        }
    }

    /// A table with its caption (Markdown needs blank lines around tables).
    pub(super) fn table(self, caption: &str, table: &Table) -> String {
        match self {
            Style::Terminal => format!("{caption}\n{table}\n"),
            Style::Markdown => format!("{caption}\n\n{table}\n\n"),
        }
    }
}

/// How a suite's results are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub style: Style,
    /// The terminal's width in columns; `None` prints every table in its full layout.
    pub width: Option<u16>,
    /// Every figure ("All figures") and every warning, instead of the grouped summary.
    pub verbose: bool,
}

impl View {
    /// The terminal's view: fitted to stdout's width when stdout is a terminal (comfy-table
    /// asks the terminal), the full layout when it is a pipe or a file. A terminal that says
    /// it has no columns (mpirun's pseudo-terminal) counts as none.
    pub fn terminal(verbose: bool) -> View {
        View {
            style: Style::Terminal,
            width: Table::new().width().filter(|w| *w > 0),
            verbose,
        }
    }

    /// What an export writes to a file: every table in its full layout, every figure.
    pub fn file() -> View {
        View {
            style: Style::Terminal,
            width: None,
            verbose: true,
        }
    }

    /// The complete document `export --format markdown` writes.
    pub fn markdown() -> View {
        View {
            style: Style::Markdown,
            width: None,
            verbose: true,
        }
    }

    /// A list item (see [`Style::item`]), on a terminal wrapped at its width with the
    /// continuation lines indented under the item's start.
    pub(super) fn item(&self, level: usize, text: &str) -> String {
        let indent = 2 * level;
        let width = self.width.filter(|w| usize::from(*w) > indent + 20);
        match (self.style, width) {
            (Style::Terminal, Some(_)) => wrap(text, width, indent, indent + 4),
            _ => self.style.item(level, text),
        }
    }
}

/// `text` wrapped at word boundaries to `width` columns, each of its lines (paragraphs) on
/// its own: the first line of each indented by `indent` spaces, the lines it continues on by
/// `hang`. Without a width, each paragraph stays one line (a pipe, a file). Ends in a newline.
pub fn wrap(text: &str, width: Option<u16>, indent: usize, hang: usize) -> String {
    let mut out = String::new();
    for paragraph in text.lines() {
        let Some(width) = width.map(usize::from) else {
            out.push_str(&format!("{}{paragraph}\n", " ".repeat(indent)));
            continue;
        };
        let mut line = String::new();
        let mut prefix = indent;
        for word in paragraph.split(' ') {
            if !line.is_empty() && prefix + line.chars().count() + 1 + word.chars().count() > width
            {
                out.push_str(&format!("{}{line}\n", " ".repeat(prefix)));
                line.clear();
                prefix = hang;
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push_str(&format!("{}{line}\n", " ".repeat(prefix)));
    }
    out
}

/// The widest line of a rendered table, in characters.
pub fn rendered_width(table: &Table) -> usize {
    table
        .to_string()
        .lines()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
}

/// Lets the cells of `table` wrap when it is wider than `width`, between words only: each
/// column keeps at least its longest word (a label cut as `ext4-noatim`/`e` reads as two).
/// Whether the table then fits.
pub(super) fn fit(table: &mut Table, width: Option<u16>) -> bool {
    let Some(width) = width else {
        return true;
    };
    if rendered_width(table) <= usize::from(width) {
        return true;
    }
    let mut longest = vec![0usize; table.column_count()];
    for row in table.header().into_iter().chain(table.row_iter()) {
        for (i, cell) in row.cell_iter().enumerate() {
            let words = cell.content();
            let word = words.split_whitespace().map(|w| w.chars().count()).max();
            longest[i] = longest[i].max(word.unwrap_or(0));
        }
    }
    // A fixed bound counts the column's padding too.
    let padding: Vec<usize> = (table.column_iter())
        .map(|c| usize::from(c.padding_width()))
        .collect();
    let bounds = (longest.iter().zip(padding)).map(|(&w, pad)| {
        let w = (w + pad).min(usize::from(width));
        ColumnConstraint::LowerBoundary(Width::Fixed(w as u16))
    });
    table.set_constraints(bounds);
    table.set_content_arrangement(ContentArrangement::Dynamic);
    table.set_width(width);
    rendered_width(table) <= usize::from(width)
}

/// Values in rows by columns, each labelled, printable either way round.
pub(super) struct Grid {
    /// The heading of the row labels, and of the column labels when turned round.
    pub corner: [String; 2],
    pub columns: Vec<String>,
    pub rows: Vec<(String, Vec<String>)>,
}

impl Grid {
    /// From its columns (a title, then a cell per row), a row per label of `rows`.
    pub(super) fn of_columns(
        corner: [String; 2],
        rows: &[&str],
        columns: Vec<(String, Vec<String>)>,
    ) -> Grid {
        Grid {
            corner,
            rows: (rows.iter().enumerate())
                .map(|(i, label)| {
                    let cells = columns.iter().map(|(_, cells)| cells[i].clone());
                    (label.to_string(), cells.collect())
                })
                .collect(),
            columns: columns.into_iter().map(|(title, _)| title).collect(),
        }
    }

    fn build(style: Style, corner: &str, columns: &[String], rows: Vec<Vec<String>>) -> Table {
        let mut t = new_table(
            style,
            std::iter::once(corner.to_string())
                .chain(columns.iter().cloned())
                .collect(),
        );
        for row in rows {
            t.add_row(row);
        }
        right_align(&mut t);
        t
    }

    fn as_given(&self, style: Style) -> Table {
        let rows = self
            .rows
            .iter()
            .map(|(label, cells)| {
                std::iter::once(label.clone())
                    .chain(cells.clone())
                    .collect()
            })
            .collect();
        Grid::build(style, &self.corner[0], &self.columns, rows)
    }

    fn turned(&self, style: Style) -> Table {
        let labels: Vec<String> = self.rows.iter().map(|(l, _)| l.clone()).collect();
        let rows = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, column)| {
                std::iter::once(column.clone())
                    .chain(self.rows.iter().map(|(_, cells)| cells[i].clone()))
                    .collect()
            })
            .collect();
        Grid::build(style, &self.corner[1], &labels, rows)
    }

    /// A row per value: its row's label, its column's, the value (the long form, for a
    /// terminal too narrow for either way round).
    fn long(&self, style: Style) -> Table {
        let mut t = new_table(
            style,
            vec![
                self.corner[0].clone(),
                self.corner[1].clone(),
                String::new(),
            ],
        );
        for (label, cells) in &self.rows {
            for (column, cell) in self.columns.iter().zip(cells) {
                t.add_row(vec![label.clone(), column.clone(), cell.clone()]);
            }
        }
        if let Some(c) = t.column_mut(2) {
            c.set_cell_alignment(CellAlignment::Right);
        }
        t
    }

    /// The table as given when it fits (or there is no width), else turned round when that
    /// fits, else the narrower of the two with cells wrapping between words, else the long
    /// form (a row per value), wrapping too.
    pub(super) fn table(&self, view: &View) -> Table {
        let given = self.as_given(view.style);
        let Some(width) = view.width else {
            return given;
        };
        let given_width = rendered_width(&given);
        if given_width <= usize::from(width) {
            return given;
        }
        let turned = self.turned(view.style);
        let mut narrower = if rendered_width(&turned) < given_width {
            turned
        } else {
            given
        };
        if fit(&mut narrower, Some(width)) {
            return narrower;
        }
        let mut long = self.long(view.style);
        fit(&mut long, Some(width));
        long
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(configs: usize) -> Grid {
        Grid {
            corner: ["Configuration".into(), "Phase".into()],
            columns: ["Directory create (s)", "File create (s)", "File remove (s)"]
                .map(String::from)
                .to_vec(),
            rows: (0..configs)
                .map(|i| (format!("config-{i}"), vec!["12.35 ± 0.123".to_string(); 3]))
                .collect(),
        }
    }

    fn view(width: Option<u16>) -> View {
        View {
            style: Style::Terminal,
            width,
            verbose: false,
        }
    }

    #[test]
    fn a_grid_turns_round_then_wraps_to_fit() {
        let full = grid(2).table(&view(None)).to_string();
        assert!(full.lines().next().unwrap().chars().count() > 60, "{full}");
        // Two configurations across are narrower than three phases across.
        let turned = grid(2).table(&view(Some(60))).to_string();
        assert!(turned.lines().all(|l| l.chars().count() <= 60), "{turned}");
        assert!(turned.contains("Phase"), "{turned}");
        // Eight configurations fit neither way: cells wrap.
        let wrapped = grid(8).table(&view(Some(60))).to_string();
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 60),
            "{wrapped}"
        );
        assert!(wrapped.contains("config-7"), "{wrapped}");
    }

    #[test]
    fn no_word_is_broken_and_what_cannot_fit_otherwise_goes_long() {
        let labels = [
            "ext4-noatime-nobarrier",
            "xfs-logbsize-256k",
            "btrfs-zstd-level-3",
        ];
        let g = Grid {
            corner: ["Configuration".into(), "Figure".into()],
            columns: [
                "pack cpu user (s)",
                "pack block written (MiB)",
                "unpack cpu user (s)",
            ]
            .map(String::from)
            .to_vec(),
            rows: (labels.iter())
                .map(|l| (l.to_string(), vec!["0.00212 ± 0.00300".to_string(); 3]))
                .collect(),
        };
        for width in [80, 50] {
            let text = g.table(&view(Some(width))).to_string();
            assert!(
                text.lines()
                    .all(|l| l.chars().count() <= usize::from(width)),
                "{text}"
            );
            // Every label and value whole, on one line.
            for whole in labels.iter().chain(&["0.00212", "0.00300", "(MiB)"]) {
                assert!(text.contains(whole), "{width}: `{whole}` broken:\n{text}");
            }
        }
    }

    #[test]
    fn items_wrap_under_their_start() {
        let text = "one two three four five six seven eight nine ten";
        let item = view(Some(30)).item(1, text);
        let lines: Vec<&str> = item.lines().collect();
        assert!(lines.len() > 1, "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 30), "{lines:?}");
        assert!(lines[0].starts_with("  one") && lines[1].starts_with("      "));
        assert_eq!(view(None).item(1, text), format!("  {text}\n"));
    }
}
