//! Files from one group of jobs to the next: fio runs a job file's groups one after the
//! other in the same directory, and a later job naming a file an earlier one left uses it as
//! it is. fsbench runs each group on a fresh filesystem (or directory), so a group whose jobs
//! name such files has the groups before it that made them run again, untimed, first
//! ([`IoParams::earlier_groups`]); its jobs on them may leave `size` out and, reading only
//! or as fio's `verify_only`, `verify` what they read.

use std::collections::HashSet;

use super::super::layout::file_name;
use super::super::{Engine, IoParams};
use super::{Line, Section};
use fsbench_measure::error::invalid;

/// The files job `p` (the `job`-th of its group) names itself, by `filename` or
/// `filename_format`, every copy's; none for the names fsbench makes up (`io.COPY.FILE`,
/// not fio's: `job` counts there alone) or the block device fsbench was given.
fn named(p: &IoParams, job: usize) -> Vec<String> {
    if p.raw_device || (p.filename.is_empty() && p.filename_format.is_none()) {
        return Vec::new();
    }
    (0..p.numjobs)
        .flat_map(|copy| (0..p.nrfiles as usize).map(move |f| file_name(p, job, copy, f)))
        .collect()
}

/// Every file a group's jobs name.
fn named_by_group(group: &IoParams) -> Vec<String> {
    (group.jobs().enumerate())
        .flat_map(|(j, p)| named(p, j))
        .collect()
}

/// The files the groups `earlier` leave behind, in order: made by their jobs, less those a
/// job removes when it ends (`unlink`, or `filedelete`'s).
fn left_by(earlier: &[IoParams]) -> HashSet<String> {
    let mut left = HashSet::new();
    for group in earlier {
        for (j, p) in group.jobs().enumerate() {
            let names = named(p, j);
            if p.unlink || p.engine == Engine::FileDelete {
                names.iter().for_each(|n| _ = left.remove(n));
            } else {
                left.extend(names);
            }
        }
    }
    left
}

/// Whether job `p` names a file the groups `earlier` left.
pub(super) fn uses_earlier_files(p: &IoParams, earlier: &[IoParams]) -> bool {
    let left = left_by(earlier);
    named(p, 0).iter().any(|n| left.contains(n))
}

/// fio's options that read the size a file has before the job (`offset=N%`, `size=N%`,
/// `file_append`), in job `s` on files a group before it made: not implemented, refused
/// with their line (fsbench would take them as on a new file).
pub(super) fn no_sizes_of_existing_files(
    s: &Section,
    global: &[&Line],
    pairs: &[(String, String, &str)],
) -> anyhow::Result<()> {
    let appends = (global.iter().copied().chain(&s.options))
        .filter(|l| l.key.replace('-', "_") == "file_append" && super::spelling::flag(&l.value))
        .map(|l| ("file_append", l.at.as_str()));
    let shares = (pairs.iter())
        .filter(|(k, _, _)| matches!(k.as_str(), "offset_percent" | "size_percent"))
        .map(|(k, _, at)| {
            (
                if k == "offset_percent" {
                    "offset=N%"
                } else {
                    "size=N%"
                },
                *at,
            )
        });
    match appends.chain(shares).last() {
        Some((option, at)) => Err(invalid(format!(
            "{at}: job `{}`: `{option}` reads the size its file has before the job, and a group before it made the file: not implemented",
            s.name
        ))),
        None => Ok(()),
    }
}

/// For each group, the groups before it whose files it uses (directly, or through a group
/// whose files it uses), in order, to run again before it: copies without groups of their
/// own to run or jobs that never start.
pub(super) fn link(groups: &mut [IoParams]) {
    let picked: Vec<Vec<usize>> = (0..groups.len())
        .map(|i| {
            let left = left_by(&groups[..i]);
            let mut wanted: HashSet<String> = named_by_group(&groups[i])
                .into_iter()
                .filter(|n| left.contains(n))
                .collect();
            let mut picked = Vec::new();
            for k in (0..i).rev() {
                let names = named_by_group(&groups[k]);
                if names.iter().any(|n| wanted.contains(n)) {
                    picked.push(k);
                    wanted.extend(names);
                }
            }
            picked.reverse();
            picked
        })
        .collect();
    let plain: Vec<IoParams> = groups.iter().map(without_followers).collect();
    for (group, picked) in groups.iter_mut().zip(picked) {
        group.earlier_groups = picked.into_iter().map(|k| plain[k].clone()).collect();
    }
}

/// A group as it runs again before a later one: its jobs, not what runs after them.
fn without_followers(group: &IoParams) -> IoParams {
    IoParams {
        earlier_groups: Vec::new(),
        never_started: Vec::new(),
        ..group.clone()
    }
}

/// fio's `verify_only` in job `s` (its own line, else its globals' last): a job that
/// writes then writes nothing and reads back what its writes would have put in its files,
/// checked as `verify` checks (a job that only reads runs as it is, as fio's). Its files
/// are those the groups before it wrote, which run again first, as for any job on them;
/// checking them is refused where a group before it made not every one of them: fio would
/// check what an earlier run left, and every fsbench run starts on fresh files.
pub(super) fn verify_only(
    s: &Section,
    global: &[&Line],
    p: &mut IoParams,
    earlier: &[IoParams],
) -> anyhow::Result<()> {
    let Some(line) = (global.iter().copied().chain(&s.options))
        .rfind(|l| l.key.replace('-', "_") == "verify_only")
        .filter(|l| super::spelling::flag(&l.value))
    else {
        return Ok(());
    };
    p.verify_only = p.rw.read_percent(p.rwmixread) < 100;
    let left = left_by(earlier);
    let unwritten = named(p, 0).into_iter().find(|n| !left.contains(n));
    if let Some(name) = unwritten.filter(|_| p.verify_only && p.verify.is_some() && p.do_verify) {
        return Err(invalid(format!(
            "{}: job `{}`: `verify_only` checks what a group before it in the job file wrote to its files (the same `filename`), and none wrote `{name}`: fio would check what an earlier run left, and every fsbench run starts on fresh files",
            line.at, s.name
        )));
    }
    Ok(())
}

/// The jobs of a job file holding `text`, as [`read`](super::read) reads them (for tests).
#[cfg(test)]
pub(crate) fn read_text(text: &str) -> anyhow::Result<Vec<IoParams>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.fio");
    std::fs::write(&path, text).unwrap();
    super::read(&path, &super::Cap::default(), &super::Targets::default())
}

#[cfg(test)]
mod tests {
    use super::read_text as jobs_of;

    #[test]
    fn a_group_runs_after_the_groups_that_made_its_files_again() {
        // fio's surface-scan.fio: the verify phase reads, with no size, the file the write
        // phase filled.
        let jobs = jobs_of(
            "[global]\nthread\nbs=64k\ndirect=1\nioengine=sync\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\n[write-phase]\nfilename=datafile.tmp\nrw=write\nfill_device=1\ndo_verify=0\n[verify-phase]\nstonewall\ncreate_serialize=0\nfilename=datafile.tmp\nrw=read\ndo_verify=1\n",
        )
        .unwrap();
        assert_eq!(jobs.len(), 2);
        let (write, check) = (&jobs[0], &jobs[1]);
        assert!(write.earlier_groups.is_empty() && !write.existing_files);
        assert_eq!(check.earlier_groups.len(), 1);
        assert_eq!(check.earlier_groups[0].job.as_deref(), Some("write-phase"));
        assert!(check.existing_files && check.size_of_files);
        // A group on files of its own, and one through a group that used the first's
        // files; a file unlinked is made anew (and needs a size).
        let jobs = jobs_of(
            "[global]\nbs=4k\nsize=64k\n[a]\nfilename=x\nrw=write\n[b]\nstonewall\nfilename=y\nrw=write\n[c]\nstonewall\nfilename=x:z\nrw=write\n[d]\nstonewall\nfilename=z\nrw=read\n[e]\nstonewall\nfilename=y\nunlink=1\n[f]\nstonewall\nfilename=y\n",
        )
        .unwrap();
        let earlier = |g: usize| -> Vec<&str> {
            (jobs[g].earlier_groups.iter())
                .map(|e| e.job.as_deref().unwrap())
                .collect()
        };
        assert_eq!(earlier(1), Vec::<&str>::new());
        assert_eq!(earlier(2), ["a"]);
        assert_eq!(earlier(3), ["a", "c"]);
        assert_eq!(earlier(4), ["b"]);
        assert!(earlier(5).is_empty() && !jobs[5].existing_files);
        let err =
            jobs_of("[w]\nfilename=y\nsize=64k\nrw=write\nunlink=1\n[r]\nstonewall\nfilename=y\n")
                .unwrap_err();
        assert!(
            format!("{err:#}").contains("job.fio:6: job `r` has no `size`"),
            "{err:#}"
        );
    }

    #[test]
    fn verify_only_reads_back_the_files_the_groups_before_it_wrote() {
        let writer = "[global]\nfilename=data\nbs=4k\nsize=64k\n[w]\nrw=write\nverify=md5\n";
        let jobs = jobs_of(&format!(
            "{writer}[check]\nstonewall\nrw=randwrite\nverify=md5\nverify_only\n[other]\nfilename=other\nrw=read\n"
        ))
        .unwrap();
        assert_eq!(jobs.len(), 2, "a job runs beside the check");
        let check = &jobs[1];
        assert!(check.verify_only && check.existing_files);
        assert_eq!(check.earlier_groups[0].job.as_deref(), Some("w"));
        assert!(!check.beside[0].verify_only);
        // A job that only reads runs as it is; without `verify` nothing is checked, and
        // the job moves nothing, as fio's.
        let jobs = jobs_of(&format!("{writer}[r]\nstonewall\nrw=read\nverify_only\n")).unwrap();
        assert!(!jobs[1].verify_only);
        let jobs = jobs_of("[c]\nfilename=data\nrw=write\nsize=64k\nverify_only=1\n").unwrap();
        assert!(jobs[0].verify_only && jobs[0].verify.is_none());
        // Files no group before it made: beside their writer, of its own name, alone.
        for (text, at) in [
            (
                format!("{writer}[check]\nrw=write\nverify=md5\nverify_only=1\n"),
                "11: job `check`",
            ),
            (
                format!(
                    "{writer}[check]\nstonewall\nfilename=mine\nrw=write\nverify=md5\nverify_only=1\n"
                ),
                "13: job `check`",
            ),
            (
                "[global]\nverify_only\n[c]\nfilename=d\nrw=write\nsize=64k\nverify=md5\n".into(),
                "2: job `c`",
            ),
        ] {
            let err = format!("{:#}", jobs_of(&text).unwrap_err());
            let wanted = format!("job.fio:{at}: `verify_only` checks what a group before it");
            assert!(err.contains(&wanted), "{text}: {err}");
        }
    }

    #[test]
    fn options_that_read_an_existing_file_s_size_are_refused_on_one_with_their_line() {
        for (line, option) in [
            ("offset=50%", "offset=N%"),
            ("size=50%\nfilesize=64k", "size=N%"),
            ("file_append=1", "file_append"),
        ] {
            let text = format!(
                "[w]\nfilename=d\nbs=4k\nsize=64k\nrw=write\n[r]\nstonewall\nfilename=d\nbs=4k\nsize=64k\n{line}\n"
            );
            let err = jobs_of(&text).unwrap_err();
            assert!(
                format!("{err:#}").contains(&format!("job.fio:11: job `r`: `{option}` reads")),
                "{err:#}"
            );
            // On a file of its own, as before.
            let own = text.replace("stonewall\nfilename=d", "stonewall\nfilename=e");
            assert!(jobs_of(&own).is_ok(), "{own}");
        }
    }

    #[test]
    fn a_job_beside_the_writer_of_its_file_shares_it_and_verifies_no_reads() {
        let err = jobs_of(
            "[global]\nfilename=d\nbs=4k\nsize=64k\n[w]\nrw=write\n[r]\nrw=read\nverify=md5\n",
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("a job that only reads"),
            "{err:#}"
        );
        let jobs = jobs_of(
            "[global]\nfilename=d\nbs=4k\nsize=64k\n[w]\nrw=write\nverify=md5\n[r]\nstonewall\nrw=read\nverify=md5\n",
        )
        .unwrap();
        assert!(jobs[1].existing_files && !jobs[1].size_of_files);
    }
}
