//! The HTML report opened in a real headless Chromium: no console messages, every chart
//! present, user strings shown as text, and a screenshot written.

use std::path::Path;
use std::process::Command;

use crate::common::*;

fn chromium() -> Option<std::path::PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| fsbench_measure::tools::find(n))
}

/// Runs headless Chromium on `page` with fresh state; returns (stdout, stderr).
fn headless(browser: &Path, page: &Path, profile: &Path, extra: &[&str]) -> (String, String) {
    let out = run(Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display())));
    (text(&out.stdout), text(&out.stderr))
}

fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn report_renders_in_chromium_without_errors() {
    if !can_run("HTML report in Chromium", &[]) {
        return;
    }
    let Some(browser) = chromium() else {
        skip("HTML report in Chromium: chromium is not installed (scripts/test.sh installs it)");
        return;
    };
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let evil = "<script>alert(1)</script>";
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args([
            "run",
            "-q",
            "--purpose",
            "Is <b>tmpfs</b> faster than tmpfs? & why",
            "--image-dir",
        ])
        .arg(dir.path())
        .args([
            "--fs",
            "tmpfs",
            "--fs",
            &format!("tmpfs:mount=noatime:label={evil}"),
        ])
        .args(["-w", "tree:dirs=4,files=3,size=1,levels=2", "--runs", "3"]));
    assert!(out.status.success());
    let page = dir.path().join("report.html");
    let out = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["report", "1", "-o"])
        .arg(&page));
    assert!(out.status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "a user string became markup");
    assert!(
        !html.contains("http://")
            || html
                .matches("http://")
                .all(|_| html.contains("xmlns=\"http://www.w3.org/2000/svg\""))
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "the report must not load anything"
    );

    let profile = tempdir();
    // The detector works: a page with a script error is caught.
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let (_, stderr) = headless(&browser, &bad, profile.path(), &["--dump-dom"]);
    assert!(
        !console_lines(&stderr).is_empty(),
        "console detection is broken:\n{stderr}"
    );

    let (dom, stderr) = headless(&browser, &page, profile.path(), &["--dump-dom"]);
    assert!(
        console_lines(&stderr).is_empty(),
        "console messages: {:?}",
        console_lines(&stderr)
    );
    // Per phase: time, rate and sync-after bars (throughput too for file create), one
    // progress chart; lifecycle: an unmount bar (tmpfs has no mkfs and no fsck).
    let bars = dom.matches("class=\"chart bar-chart\"").count();
    let curves = dom.matches("class=\"chart progress-chart\"").count();
    assert_eq!(bars, 4 * 3 + 1 + 1, "bar charts");
    assert_eq!(curves, 4, "progress charts");
    // Beside every phase's bar chart, a strip plot of its runs.
    let strips = dom.matches("class=\"chart strip-chart\"").count();
    assert_eq!(strips, 4 * 3 + 1, "strip plots");
    assert!(
        dom.matches("class=\"error-bar\"").count() >= 3 * bars,
        "CI error bars"
    );
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "the label shows as text"
    );
    assert!(!dom.contains("<script>alert(1)"));
    assert!(dom.contains("Is &lt;b&gt;tmpfs&lt;/b&gt; faster than tmpfs? &amp; why"));
    for section in [
        "Contents",
        "Summary",
        "Warnings",
        "Comparison",
        "Raw runs",
        "Latency",
        "p99 µs",
        "Mount options as mounted",
    ] {
        assert!(dom.contains(section), "missing section {section}");
    }

    // The answers and the charts lead; the verdict list and the suites' details follow.
    let at = |what: &str| dom.find(what).unwrap_or_else(|| panic!("no {what}"));
    let chart = at("class=\"chart");
    assert!(at("id=\"summary\"") < chart, "the summary first");
    assert!(chart < at("id=\"comparison\"") && chart < at("id=\"suite-"));

    let shot = dir.path().join("report.png");
    let (_, stderr) = headless(
        &browser,
        &page,
        profile.path(),
        &[
            "--window-size=1200,3000",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    assert!(console_lines(&stderr).is_empty());
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    if let Some(keep) = std::env::var_os("FSBENCH_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }

    // At a phone-sized width nothing sticks out sideways: a copy of the page with a probe
    // that writes the document's scroll width next to the window's into the DOM.
    let probe = dir.path().join("probe.html");
    let probed = html.replace(
        "</body>",
        "<script>document.body.dataset.fit = document.documentElement.scrollWidth + ' ' + \
         window.innerWidth;</script></body>",
    );
    std::fs::write(&probe, probed).unwrap();
    for width in [800, 1400] {
        let (dom, _) = headless(
            &browser,
            &probe,
            profile.path(),
            &[&format!("--window-size={width},2000"), "--dump-dom"],
        );
        let fit = dom
            .split("data-fit=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the probe ran");
        let (scroll, window) = fit.split_once(' ').unwrap();
        assert!(
            scroll.parse::<u32>().unwrap() <= window.parse::<u32>().unwrap(),
            "at {width} px the page is {scroll} px wide"
        );
    }
}

#[test]
fn a_suite_varying_iodepth_and_bs_charts_iops_and_p99_against_them() {
    if !can_run("io sweep charts over two tmpfs configurations", &[]) {
        return;
    }
    let (dir, state) = (tempdir(), tempdir());
    let db = state.path().join("results.db");
    let io = |more: &str| format!("io:rw=randread,size=2m,ioengine=io_uring,{more}");
    let workloads = [
        io("bs=4k,iodepth=1"),
        io("bs=4k,iodepth=4"),
        io("bs=4k,iodepth=16"),
        io("bs=16k,iodepth=4"),
    ];
    let mut cmd = fsbench(state.path());
    cmd.arg("--db").arg(&db).args(["run", "-q", "--image-dir"]);
    cmd.arg(dir.path()).args([
        "--fs",
        "tmpfs",
        "--fs",
        "tmpfs:mount=noatime",
        "--runs",
        "1",
    ]);
    for w in &workloads {
        cmd.args(["-w", w]);
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["report", "1", "-o", "-"]));
    let html = text(&report.stdout);
    let export = run(fsbench(state.path())
        .arg("--db")
        .arg(&db)
        .args(["export", "1", "--format", "json"]));
    let doc = json(&export);
    // The stored mean of `metric` (at `pct`) of a workload on a configuration.
    let mean = |config: &str, workload: &str, metric: &str, pct: Option<&str>| -> f64 {
        let s = doc["summaries"].as_array().unwrap().iter().find(|s| {
            s["config"] == config
                && s["workload"] == format!("io:randread,{workload}")
                && s["metric"] == metric
                && s["dims"][0]["text"] == "read"
                && pct.is_none_or(|p| s["dims"][1]["text"] == p)
        });
        s.unwrap_or_else(|| panic!("{config} {workload} {metric}"))["mean"]
            .as_f64()
            .unwrap()
    };
    // iodepth: IOPS and p99 (read); bs: the same two. 4 charts, one line per configuration.
    assert_eq!(html.matches("class=\"chart sweep-chart\"").count(), 4);
    assert!(html.contains("IOPS against iodepth (one line per configuration)"));
    assert!(html.contains("p99 read completion latency against bs"));
    // Each line's tooltip gives its points in the parameter's order: the stored means.
    let tooltips = |config: &str, parameter: &str| -> Vec<Vec<(String, f64)>> {
        let start = format!("<title>{config}: {parameter}=");
        html.match_indices(&start)
            .map(|(i, _)| {
                let body = &html[i + "<title>".len() + config.len() + 2..];
                let body = &body[..body.find("</title>").unwrap()];
                (body.split(", ").filter(|p| p.contains('=')))
                    .map(|p| {
                        let (name, value) = p.split_once(": ").unwrap();
                        let value = value.replace(',', "").parse::<f64>().unwrap();
                        (name.to_string(), value)
                    })
                    .collect()
            })
            .collect()
    };
    let depths = [
        ("iodepth=1", "bs=4K,size=2M,io_uring"),
        ("iodepth=4", "bs=4K,size=2M,io_uring,iodepth=4"),
        ("iodepth=16", "bs=4K,size=2M,io_uring,iodepth=16"),
    ];
    let sizes = [
        ("bs=4K", "bs=4K,size=2M,io_uring,iodepth=4"),
        ("bs=16K", "bs=16K,size=2M,io_uring,iodepth=4"),
    ];
    for config in ["tmpfs", "tmpfs -o noatime"] {
        for (parameter, points) in [("iodepth", &depths[..]), ("bs", &sizes[..])] {
            let lines = tooltips(config, parameter);
            assert_eq!(lines.len(), 2, "{config} {parameter}: IOPS and p99");
            for (line, (metric, pct)) in lines.iter().zip([("iops", None), ("clat", Some("p99"))]) {
                let names: Vec<&str> = line.iter().map(|(n, _)| n.as_str()).collect();
                let expected: Vec<&str> = points.iter().map(|(n, _)| *n).collect();
                assert_eq!(names, expected, "{config} {metric}");
                for ((_, shown), (name, workload)) in line.iter().zip(points) {
                    let stored = mean(config, workload, metric, pct);
                    assert!(
                        (shown - stored).abs() <= stored * 1e-3,
                        "{config} {metric} {name}: shown {shown}, stored {stored}"
                    );
                }
            }
        }
    }
    assert_nothing_left(dir.path());
}
