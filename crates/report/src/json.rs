//! The versioned JSON document of a suite: every run's raw figures and the summaries.

use fsbench_model::results::SuiteResult;

pub(crate) fn render(result: &SuiteResult) -> String {
    serde_json::to_string_pretty(result).expect("results serialize")
}
