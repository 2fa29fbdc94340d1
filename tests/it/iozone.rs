//! The IOzone-style matrix: bytes and sizes of every cell, threads, O_DIRECT on real
//! filesystems and its refusal, and IOzone's -R export layout.

use std::path::Path;

use crate::common::*;

fn cells(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    matrix_cells(doc)
}

#[test]
fn every_cell_moves_its_file_on_every_thread() {
    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .args(["--runs", "1", "--dir"])
        .arg(dir.path())
        .args([
            "-w",
            "iozone:sizes=256k+1m,records=4k+64k+512k,stdio,threads=2",
        ]));
    assert!(out.status.success());
    let doc = json(&out);
    let cells = cells(&doc);
    let tests: Vec<&str> = fsbench_workloads::iozone::TESTS
        .iter()
        .map(|t| t.0)
        .collect();
    // 2 file sizes × 3 records (512k fits the 1m file only) → 5 cells, every test in each.
    assert_eq!(cells.len(), 5 * tests.len());
    for c in &cells {
        let (f, r) = (
            c["file_size"].as_u64().unwrap(),
            c["record_size"].as_u64().unwrap(),
        );
        assert!(r <= f);
        // Both threads moved their whole file.
        assert_eq!(c["bytes"].as_f64().unwrap(), 2.0 * f as f64, "{c}");
        let (lo, avg, hi) = (
            c["thread min"].as_f64().unwrap(),
            c["thread avg"].as_f64().unwrap(),
            c["thread max"].as_f64().unwrap(),
        );
        assert!(lo <= avg && avg <= hi && lo > 0.0, "{c}");
        assert!(c["throughput"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["cpu"].as_f64().unwrap() >= 0.0, "{c}");
    }
    let order: Vec<&str> = cells
        .iter()
        .take(tests.len())
        .map(|c| c["test"].as_str().unwrap())
        .collect();
    assert_eq!(order, tests, "IOzone's test order within a cell");
    let summaries = doc["summaries"].as_array().unwrap();
    let at = |test: &str| {
        serde_json::json!([
            {"name": "test", "text": test},
            {"name": "file size", "bytes": 1 << 20},
            {"name": "record size", "bytes": 64 << 10},
        ])
    };
    assert!(summaries.iter().any(|s| s["metric"] == "throughput"
        && s["dims"] == at("stride-read")
        && s["unit"] == "KiB/s"));
    assert!(
        summaries
            .iter()
            .any(|s| s["metric"] == "cpu" && s["dims"] == at("write") && s["unit"] == "%")
    );
    // A matrix phase has no overall rate: it would mix every cell.
    assert!(
        !summaries
            .iter()
            .any(|s| s["phase"] == "matrix" && s["metric"] == "rate")
    );
    // The files are gone after each cell.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // IOzone's -R layout: titled blocks, record sizes (KiB) across, file sizes (KiB) down.
    let id = doc["id"].as_i64().unwrap().to_string();
    let export = text(
        &run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["export", &id, "--format", "iozone"]))
        .stdout,
    );
    let lines: Vec<&str> = export.lines().collect();
    // The normal table names every column it fills, pwrite and pread too, above its data.
    let header = lines
        .iter()
        .position(|l| l.contains("reclen"))
        .expect("normal table header");
    assert!(
        lines[header]
            .trim_end()
            .ends_with("pwrite repwrite   pread  repread"),
        "{}",
        lines[header]
    );
    assert_eq!(
        lines[header].trim_end().len(),
        lines[header + 1].trim_end().len(),
        "{}\n{}",
        lines[header],
        lines[header + 1]
    );
    let writer = lines
        .iter()
        .position(|l| *l == "\"Writer report\"")
        .expect("Writer report block");
    assert_eq!(
        lines[writer + 1].split_whitespace().collect::<Vec<_>>(),
        ["\"4\"", "\"64\"", "\"512\""]
    );
    let row: Vec<&str> = lines[writer + 2].split_whitespace().collect();
    assert_eq!(row[0], "\"256\"");
    assert_eq!(row.len(), 3, "256 KiB file: 4K and 64K records");
    assert!(row[1].parse::<u64>().unwrap() > 0);
    for title in [
        "Re-writer report",
        "Reader report",
        "Re-Reader report",
        "Random read report",
        "Random write report",
        "Backward read report",
        "Record rewrite report",
        "Stride read report",
        "Fwrite report",
        "Fread report",
        "Pwrite report",
        "Pread report",
    ] {
        assert!(
            lines.contains(&format!("\"{title}\"").as_str()),
            "missing {title}"
        );
    }
    let show = |extra: &[&str]| {
        text(
            &run(fsbench(state.path())
                .arg("--db")
                .arg(&db)
                .args(["show", &id])
                .args(extra))
            .stdout,
        )
    };
    // By default a line per test (geometric mean, best and worst cell); the matrices with --all.
    let table = show(&[]);
    assert!(
        table.contains("Geometric mean") && table.lines().any(|l| l.contains("backward-read")),
        "{table}"
    );
    assert!(!table.contains("backward-read: MiB/s"), "{table}");
    let all = show(&["--all"]);
    assert!(all.contains("backward-read: MiB/s"), "{all}");
}

fn direct_run(fs: &str, tool: &str, records: &str) -> Option<std::process::Output> {
    if !can_run(&format!("O_DIRECT on {fs}"), &[tool]) {
        return None;
    }
    let dir = tempdir();
    let state = tempdir();
    let out = run(json_run(state.path())
        .args(["--runs", "1", "--fs", fs, "--image-dir"])
        .arg(dir.path())
        .args([
            "-w",
            &format!("iozone:sizes=1m,records={records},tests=0+1+2+3,direct"),
        ]));
    assert_nothing_left(Path::new(dir.path()));
    Some(out)
}

#[test]
fn o_direct_works_on_ext4_xfs_and_btrfs() {
    for (fs, tool) in [
        ("ext4", "mkfs.ext4"),
        ("xfs", "mkfs.xfs"),
        ("btrfs", "mkfs.btrfs"),
    ] {
        let Some(out) = direct_run(fs, tool, "4k+64k") else {
            continue;
        };
        assert!(out.status.success(), "{fs}");
        let doc = json(&out);
        let cells = cells(&doc);
        assert_eq!(cells.len(), 2 * 7, "{fs}");
        assert!(
            cells
                .iter()
                .all(|c| c["bytes"].as_f64() == Some((1 << 20) as f64)),
            "{fs}"
        );
        assert!(
            doc["suite"]["workload"][0]["direct"].as_bool().unwrap(),
            "{fs}"
        );
    }
}

#[test]
fn o_direct_refuses_unaligned_records_before_any_io() {
    let Some(out) = direct_run("ext4", "mkfs.ext4", "1000") else {
        return;
    };
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("O_DIRECT on ext2/3/4 needs sizes that are multiples of")
            && err.contains("1000 is not"),
        "{err}"
    );
    let doc = json(&out);
    assert!(
        doc["runs"][0]["phases"].as_array().unwrap().is_empty(),
        "no phase ran"
    );
}

#[test]
fn files_that_do_not_fit_the_target_are_skipped() {
    if !can_run("iozone on a small directory target", &[]) {
        return;
    }
    let dir = tempdir();
    let state = tempdir();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    assert!(
        status(
            std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=32m", "tmpfs"])
                .arg(&small)
        )
        .success()
    );
    let out = run(json_run(state.path())
        .args(["--runs", "1", "--dir"])
        .arg(&small)
        .args(["-w", "iozone:sizes=1m+64m,records=1m,tests=0"]));
    status(std::process::Command::new("umount").arg(&small));
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("skipping files of 64.0 MiB and larger"));
    let sizes: Vec<u64> = cells(&json(&out))
        .iter()
        .map(|c| c["file_size"].as_u64().unwrap())
        .collect();
    assert_eq!(
        sizes,
        [1 << 20, 1 << 20],
        "write and rewrite of the 1 MiB file only"
    );
}

#[test]
fn every_threads_file_is_removed_after_its_cell() {
    // Larger file first: a file left behind by one cell would be too large for the next.
    let dir = tempdir();
    let state = tempdir();
    let out = run(json_run(state.path())
        .args(["--runs", "1", "--dir"])
        .arg(dir.path())
        .args(["-w", "iozone:sizes=1m+256k,records=64k,tests=0+1,threads=3"]));
    assert!(out.status.success());
    let sizes: Vec<u64> = cells(&json(&out))
        .iter()
        .map(|c| c["bytes"].as_f64().unwrap() as u64)
        .collect();
    assert_eq!(
        sizes,
        [
            3 << 20,
            3 << 20,
            3 << 20,
            3 << 20,
            3 << 18,
            3 << 18,
            3 << 18,
            3 << 18
        ]
    );
}

/// One report's cells: (file KiB, record KiB) → KiB/s.
type Cells = std::collections::BTreeMap<(u64, u64), u64>;

/// IOzone's Excel section parsed strictly, as a script written against IOzone 3.489's real
/// output would: `Excel output is below:`, then per test a blank line, the quoted title, a
/// header of six spaces and `  "<KiB>"` per record size, and rows `"<KiB>"  ` followed by
/// ` <KiB/s> ` per cell. Any other line fails the parse. {title: {(file KiB, record KiB): KiB/s}}.
fn parse_iozone_excel(text: &str) -> Vec<(String, Cells)> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == "Excel output is below:")
        .expect("Excel section");
    assert_eq!(lines[start - 1], "iozone test complete.");
    let mut reports = Vec::new();
    let mut i = start + 1;
    while i + 2 < lines.len() && lines[i].is_empty() && lines[i + 1].starts_with('"') {
        let title = lines[i + 1]
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap();
        let header = lines[i + 2]
            .strip_prefix("      ")
            .expect("six spaces before the records");
        let records: Vec<u64> = header
            .split("  \"")
            .skip(1)
            .map(|r| r.strip_suffix('"').unwrap().parse().unwrap())
            .collect();
        assert_eq!(
            header,
            records
                .iter()
                .map(|r| format!("  \"{r}\""))
                .collect::<String>()
        );
        let mut cells = std::collections::BTreeMap::new();
        i += 3;
        while i < lines.len() && lines[i].starts_with('"') {
            let (size, values) = lines[i][1..].split_once("\"  ").expect("`\"<KiB>\"  `");
            let size: u64 = size.parse().unwrap();
            let values: Vec<u64> = values
                .split_terminator(' ')
                .filter(|v| !v.is_empty())
                .map(|v| v.parse().unwrap())
                .collect();
            let rebuilt: String = values.iter().map(|v| format!(" {v} ")).collect();
            assert_eq!(
                lines[i][1..].split_once("\"  ").unwrap().1,
                rebuilt,
                "{}",
                lines[i]
            );
            for (record, v) in records.iter().zip(values) {
                cells.insert((size, *record), v);
            }
            i += 1;
        }
        reports.push((title.to_string(), cells));
    }
    reports
}

/// IOzone's normal table: its two header lines and its rows.
struct NormalTable {
    header: [String; 2],
    /// (file KiB, record KiB, the row's length, each column's KiB/s or blank).
    rows: Vec<(u64, u64, usize, Vec<Option<u64>>)>,
}

/// IOzone's normal table parsed by column, as a script written against IOzone 3.489's real
/// output would: the header line starting with `kB  reclen` and the line above it, then
/// rows of `%16lld%8lld` and fields of IOzone's widths (write, rewrite, read, reread,
/// random read, random write, bkwd read, record rewrite, stride read, fwrite, frewrite,
/// fread, freread) until the blank line; a blank field is a test not run.
fn parse_iozone_table(text: &str) -> NormalTable {
    const WIDTHS: [usize; 13] = [9, 9, 9, 9, 9, 9, 9, 10, 10, 9, 9, 9, 9];
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("kB  reclen"))
        .expect("the table's header");
    let mut rows = Vec::new();
    for line in lines[at + 1..].iter().take_while(|l| !l.is_empty()) {
        let number = |s: &str| s.trim().parse::<u64>().unwrap_or_else(|_| panic!("{line}"));
        let (mut fields, mut pos) = (Vec::new(), 24);
        for width in WIDTHS {
            let field = line.get(pos..(pos + width).min(line.len())).unwrap_or("");
            fields.push((!field.trim().is_empty()).then(|| number(field)));
            pos += width;
        }
        rows.push((
            number(&line[..16]),
            number(&line[16..24]),
            line.len(),
            fields,
        ));
    }
    NormalTable {
        header: [lines[at - 1].to_string(), lines[at].to_string()],
        rows,
    }
}

#[test]
fn the_iozone_export_reads_like_iozone_s_own_output() {
    // The parsers first read IOzone 3.489's real output (`iozone -a -n 64k -g 128k -i 0 -i 1
    // -i 2 -R`): 64 KiB files have five records, 128 KiB files six.
    let real_text = include_str!("fixtures/iozone_3.489_R.txt");
    let real = parse_iozone_excel(real_text);
    let real_table = parse_iozone_table(real_text);
    assert_eq!(real_table.rows.len(), 5 + 6);
    assert!(
        real_table
            .rows
            .iter()
            .all(|r| r.3[..6].iter().all(Option::is_some) && r.3[6..].iter().all(Option::is_none))
    );
    let titles: Vec<&str> = real.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Writer report",
            "Re-writer report",
            "Reader report",
            "Re-Reader report",
            "Random read report",
            "Random write report"
        ]
    );
    assert_eq!(real[0].1.len(), 5 + 6);
    assert!(real[0].1.contains_key(&(128, 128)));

    let dir = tempdir();
    let state = tempdir();
    let db = state.path().join("results.db");
    let out = run(json_run(state.path())
        .arg("--db")
        .arg(&db)
        .args(["--runs", "1", "--dir"])
        .arg(dir.path())
        .args([
            "-w",
            "iozone:sizes=64k+128k,records=4k+8k+16k+32k+64k+128k,tests=0+1+2",
        ]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = json(&out)["id"].as_i64().unwrap().to_string();
    let export = text(
        &run(fsbench(state.path())
            .arg("--db")
            .arg(&db)
            .args(["export", &id, "--format", "iozone"]))
        .stdout,
    );
    let ours = parse_iozone_excel(&export);
    let titles: Vec<&str> = ours.iter().map(|(t, _)| t.as_str()).collect();
    let real_titles: Vec<&str> = real.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(titles, real_titles);
    // The normal table: IOzone's header to the byte, the same rows, each as long as
    // IOzone's (its blanks for the tests not run included), the same columns filled.
    let table = parse_iozone_table(&export);
    assert_eq!(table.header, real_table.header);
    let shape = |t: &NormalTable| -> Vec<(u64, u64, usize, Vec<bool>)> {
        t.rows
            .iter()
            .map(|r| (r.0, r.1, r.2, r.3.iter().map(Option::is_some).collect()))
            .collect()
    };
    assert_eq!(shape(&table), shape(&real_table));
    // Its cells are the Excel section's.
    for (file, record, _, fields) in &table.rows {
        for (column, (_, cells)) in ours.iter().enumerate() {
            assert_eq!(fields[column], cells.get(&(*file, *record)).copied());
        }
    }
    for ((_, theirs), (title, mine)) in real.iter().zip(&ours) {
        let (a, b): (Vec<_>, Vec<_>) = (theirs.keys().collect(), mine.keys().collect());
        assert_eq!(a, b, "{title}: the same cells");
        assert!(mine.values().all(|v| *v > 0), "{title}");
    }
}
