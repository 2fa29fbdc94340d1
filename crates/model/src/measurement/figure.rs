//! Figures a workload reports beside its measurement, and the dimensions that place a figure
//! in a breakdown (a matrix cell, a method, a thread).

use serde::{Deserialize, Serialize};

/// A figure a workload reports of its own (extents per file, transactions per second of one
/// operation, one cell of a throughput matrix...), summarized across runs like the measured
/// ones.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Figure {
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
    pub value: f64,
    /// Where in a breakdown the figure sits (an IOzone cell's test, file and record size):
    /// figures with the same name and different dimensions are different figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<Dim>,
}

impl Figure {
    pub fn new(name: impl Into<String>, unit: &str, higher_is_better: bool, value: f64) -> Figure {
        Figure {
            name: name.into(),
            unit: unit.to_string(),
            higher_is_better,
            value,
            dims: Vec::new(),
        }
    }

    /// The same figure at a place in a breakdown.
    pub fn at(mut self, dims: &[Dim]) -> Figure {
        self.dims = dims.to_vec();
        self
    }
}

/// One named coordinate of a figure, e.g. `file size` = 64 KiB.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub struct Dim {
    pub name: String,
    #[serde(flatten)]
    pub value: DimValue,
}

impl Dim {
    pub fn new(name: &str, value: DimValue) -> Dim {
        Dim {
            name: name.to_string(),
            value,
        }
    }
}

/// A coordinate's value; its kind says how to print and order it. Stored as
/// `{"name": …, "bytes": 65536}`, `{"name": …, "count": 3}` or `{"name": …, "text": "write"}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum DimValue {
    Bytes(u64),
    Count(u64),
    Text(String),
}

impl std::fmt::Display for DimValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DimValue::Bytes(b) => f.write_str(&crate::units::compact_size(*b)),
            DimValue::Count(n) => write!(f, "{n}"),
            DimValue::Text(t) => f.write_str(t),
        }
    }
}

/// A figure's name with its dimensions, for people: `throughput write 64K 4K`.
pub fn figure_name(metric: &str, dims: &[Dim]) -> String {
    let mut name = metric.to_string();
    for d in dims {
        name.push(' ');
        name.push_str(&d.value.to_string());
    }
    name
}
