//! The versioned JSON document of a suite: every run's raw figures and the summaries.

use crate::results::SuiteResult;

pub fn render(result: &SuiteResult) -> String {
    serde_json::to_string_pretty(result).expect("results serialize")
}
