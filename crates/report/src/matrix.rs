//! Figures broken down by three dimensions (an IOzone matrix: test × file size × record size)
//! as tables: one per value of the first dimension, the second down, the third across. Any
//! workload whose figures carry three dimensions gets these views; none is IOzone's own.

use std::collections::HashMap;

use fsbench_model::measurement::DimValue;
use fsbench_model::results::MetricSummary;
use fsbench_model::results::Summary;

/// One figure's matrix over some columns (configurations, possibly of several suites).
pub(crate) struct Matrix<'a> {
    pub phase: String,
    pub metric: String,
    pub unit: String,
    /// The three dimensions' names: tables, rows, columns.
    pub names: [String; 3],
    /// Values of the first dimension in the order first measured (IOzone's test order).
    pub tables: Vec<DimValue>,
    /// Values of the second and third dimensions, sorted.
    pub rows: Vec<DimValue>,
    pub cols: Vec<DimValue>,
    values: HashMap<(String, [DimValue; 3]), &'a Summary>,
}

impl<'a> Matrix<'a> {
    /// The matrix of the first figure with three dimensions among `summaries` (each with the
    /// name of the column it belongs to), over every summary of that phase and figure.
    pub(crate) fn of(
        summaries: impl IntoIterator<Item = (String, &'a MetricSummary)>,
    ) -> Option<Self> {
        let mut matrix: Option<Matrix<'a>> = None;
        for (column, s) in summaries {
            let [a, b, c] = &s.dims[..] else {
                continue;
            };
            let m = matrix.get_or_insert_with(|| Matrix {
                phase: s.phase.clone(),
                metric: s.metric.clone(),
                unit: s.unit.clone(),
                names: [a.name.clone(), b.name.clone(), c.name.clone()],
                tables: Vec::new(),
                rows: Vec::new(),
                cols: Vec::new(),
                values: HashMap::new(),
            });
            if s.phase != m.phase || s.metric != m.metric {
                continue;
            }
            if !m.tables.contains(&a.value) {
                m.tables.push(a.value.clone());
            }
            m.rows.push(b.value.clone());
            m.cols.push(c.value.clone());
            let key = [a.value.clone(), b.value.clone(), c.value.clone()];
            m.values.insert((column, key), &s.summary);
        }
        let mut m = matrix?;
        for v in [&mut m.rows, &mut m.cols] {
            v.sort();
            v.dedup();
        }
        Some(m)
    }

    /// The summary of one cell of one column.
    pub(crate) fn get(
        &self,
        column: &str,
        table: &DimValue,
        row: &DimValue,
        col: &DimValue,
    ) -> Option<&'a Summary> {
        let key = [table.clone(), row.clone(), col.clone()];
        self.values.get(&(column.to_string(), key)).copied()
    }

    /// Whether `column` has any cell in `table` (an empty map is not drawn).
    pub(crate) fn has(&self, column: &str, table: &DimValue) -> bool {
        self.rows.iter().any(|r| {
            self.cols
                .iter()
                .any(|c| self.get(column, table, r, c).is_some())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsbench_model::measurement::Dim;

    fn summary(config: &str, dims: [DimValue; 3], mean: f64) -> MetricSummary {
        let names = ["test", "file size", "record size"];
        MetricSummary {
            config: config.into(),
            workload: "iozone".into(),
            phase: "matrix".into(),
            metric: "throughput".into(),
            dims: names
                .iter()
                .zip(dims)
                .map(|(n, v)| Dim::new(n, v))
                .collect(),
            unit: "KiB/s".into(),
            higher_is_better: true,
            summary: fsbench_stats::summarize(&[mean]).unwrap(),
        }
    }

    #[test]
    fn tables_keep_measured_order_and_axes_sort() {
        use DimValue::{Bytes, Text};
        let s = [
            summary(
                "a",
                [Text("write".into()), Bytes(1 << 20), Bytes(64 << 10)],
                1.0,
            ),
            summary(
                "a",
                [Text("read".into()), Bytes(1 << 20), Bytes(4 << 10)],
                2.0,
            ),
            summary(
                "b",
                [Text("write".into()), Bytes(256 << 10), Bytes(4 << 10)],
                3.0,
            ),
        ];
        let m = Matrix::of(s.iter().map(|s| (s.config.clone(), s))).unwrap();
        assert_eq!(m.tables, [Text("write".into()), Text("read".into())]);
        assert_eq!(m.rows, [Bytes(256 << 10), Bytes(1 << 20)]);
        assert_eq!(m.cols, [Bytes(4 << 10), Bytes(64 << 10)]);
        assert_eq!(m.names[1], "file size");
        let get = |c: &str, t: &str, f: u64, r: u64| {
            m.get(c, &Text(t.into()), &Bytes(f), &Bytes(r))
                .map(|s| s.mean)
        };
        assert_eq!(get("b", "write", 256 << 10, 4 << 10), Some(3.0));
        assert_eq!(get("a", "read", 1 << 20, 4 << 10), Some(2.0));
        assert_eq!(get("b", "read", 1 << 20, 4 << 10), None);
        assert!(m.has("b", &Text("write".into())));
        assert!(!m.has("b", &Text("read".into())));
        let flat = [MetricSummary {
            dims: Vec::new(),
            ..s[0].clone()
        }];
        assert!(Matrix::of(flat.iter().map(|s| (s.config.clone(), s))).is_none());
    }
}
