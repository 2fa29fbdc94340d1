//! fio's output formats of the io workload (`fsbench fio --output-format normal|json|json+|
//! terse`, `fsbench export --format fio|fio-json|fio-json+|fio-terse`).

use super::Report;
use crate::fit::View;
use fsbench_model::results::SuiteResult;

pub(super) struct Fio;

impl Report for Fio {
    fn name(&self) -> &'static str {
        "fio"
    }
    fn describe(&self) -> &'static str {
        "fio's normal output of the io workload's jobs (fsbench fio: `normal`)"
    }
    fn on_stdout(&self) -> Option<&'static str> {
        Some(self.describe())
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        crate::fio::normal(suite)
    }
    fn leads_terminal(&self, suite: &SuiteResult, _: &View) -> String {
        crate::fio::render(suite)
    }
}

pub(super) struct FioJson;

impl Report for FioJson {
    fn name(&self) -> &'static str {
        "fio-json"
    }
    fn describe(&self) -> &'static str {
        "fio's --output-format=json of the io workload's jobs (fsbench fio: `json`)"
    }
    fn on_stdout(&self) -> Option<&'static str> {
        Some(self.describe())
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        crate::fio::json(suite, false)
    }
}

pub(super) struct FioJsonPlus;

impl Report for FioJsonPlus {
    fn name(&self) -> &'static str {
        "fio-json+"
    }
    fn describe(&self) -> &'static str {
        "fio's json+: fio-json with each latency's histogram bins (fsbench fio: `json+`)"
    }
    fn on_stdout(&self) -> Option<&'static str> {
        Some(self.describe())
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        crate::fio::json(suite, true)
    }
}

pub(super) struct FioTerse;

impl Report for FioTerse {
    fn name(&self) -> &'static str {
        "fio-terse"
    }
    fn describe(&self) -> &'static str {
        "fio's terse output, version 3, of the io workload's jobs (fsbench fio: `terse`)"
    }
    fn on_stdout(&self) -> Option<&'static str> {
        Some(self.describe())
    }
    fn render(&self, suite: &SuiteResult, _: &View) -> anyhow::Result<String> {
        crate::fio::terse(suite)
    }
}
