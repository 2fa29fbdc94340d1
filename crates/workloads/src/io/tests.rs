use super::*;
use crate::WorkloadParams;

#[test]
fn options_read_as_fio_reads_them() {
    let p = IoParams::parse("rw=randrw,rwmixread=70,bs=8k,size=16m,nrfiles=2,ioengine=io_uring,iodepth=32,iodepth_batch_submit=8,runtime=2s,time_based,ramp_time=500ms,rate_iops=100")
        .unwrap();
    assert_eq!(p.rw, Rw::RandRw);
    assert_eq!(p.rwmixread, 70);
    assert_eq!(p.bssplit, vec![(8192, 100)]);
    assert_eq!(p.filesize, 8 << 20);
    assert_eq!(
        (p.engine, p.iodepth, p.iodepth_batch_submit),
        (Engine::IoUring, 32, 8)
    );
    assert_eq!((p.runtime_ms, p.ramp_ms, p.rate_iops), (2000, 500, 100));
    assert!(p.time_based && p.randrepeat && p.invalidate);
    p.validate().unwrap();
}

#[test]
fn contradictions_are_refused_with_the_options_named() {
    for (args, needle) in [
        ("time_based", "`time-based` needs a `runtime`"),
        ("rate=1m,rate_iops=10", "not both"),
        ("size=1m,filesize=1m,offset=1m", "`offset`"),
        ("hipri,ioengine=pvsync2", "needs `direct`"),
    ] {
        let err = IoParams::parse(args)
            .and_then(|p| p.validate().map(|()| p))
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{args}: {err}");
    }
    let err = IoParams::parse("bssplit=4k/50:8k/40")
        .unwrap_err()
        .to_string();
    assert!(err.contains("adding up to 100"), "{err}");
    let err = IoParams::parse("random_distribution=zipf:1")
        .unwrap_err()
        .to_string();
    assert!(err.contains("θ ≠ 1"), "{err}");
    // fio takes iodepth above 1 with a synchronous engine, and keeps one I/O in flight.
    let p = IoParams::parse("ioengine=psync,iodepth=8").unwrap();
    p.validate().unwrap();
    assert_eq!(p.depth(), 1);
    assert_eq!(
        IoParams::parse("ioengine=libaio,iodepth=8")
            .unwrap()
            .depth(),
        8
    );
    let err = IoParams::parse("runtime=5x").unwrap_err().to_string();
    assert!(err.contains("units are"), "{err}");
}

#[test]
fn size_filesize_and_offset_relate_as_in_fio() {
    // fio lays out a 2 MiB file for size=1m,offset=1m and reads 1 MiB from its middle.
    let p = IoParams::parse("size=1m,offset=1m").unwrap();
    assert_eq!(
        (p.size, p.filesize, p.region()),
        (1 << 20, 2 << 20, 1 << 20)
    );
    // filesize=2m,nrfiles=2 alone moves both files' bytes.
    let p = IoParams::parse("filesize=2m,nrfiles=2").unwrap();
    assert_eq!((p.size, p.filesize), (4 << 20, 2 << 20));
    assert!(IoParams::parse("preset=randread-4k,size=0").is_err());
}
