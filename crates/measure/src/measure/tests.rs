use super::*;

#[test]
fn records_latency_errors_and_units() {
    let progress = Arc::new(Progress::default());
    let mut rec = PhaseRecorder::start("test", progress.clone());
    assert_eq!(rec.record(OpKind::Mkdir, Ok(7)).unwrap(), Some(7));
    rec.unit_done(4096).unwrap();
    assert_eq!(
        rec.record::<()>(OpKind::Mkdir, Err(Errno::EXIST)).unwrap(),
        None
    );
    let full = rec.record::<()>(OpKind::Create, Err(Errno::NOSPC));
    assert!(matches!(full, Err(FsbenchError::DiskFull { .. })));
    assert_eq!(progress.done.load(Ordering::Relaxed), 1);
    let m = rec.finish();
    assert_eq!((m.ops, m.bytes), (1, 4096));
    assert_eq!(m.latency["mkdir"].count, 2);
    assert_eq!(m.latency["create"].count, 1);
    assert!(!m.latency.contains_key("unlink"));
    assert_eq!(m.errors["EEXIST"], 1);
    let decoded = m.latency["mkdir"].decode().unwrap();
    assert_eq!(decoded.len(), 2);
    let merged = LatencySummary::merge([&m.latency["mkdir"], &m.latency["create"]]).unwrap();
    assert_eq!(merged.count, 3);
    assert_eq!(
        merged.max_ns,
        m.latency["mkdir"].max_ns.max(m.latency["create"].max_ns)
    );
    assert_eq!(m.errors["ENOSPC"], 1);
}

#[test]
fn cancel_stops_at_next_unit() {
    let progress = Arc::new(Progress::default());
    let mut rec = PhaseRecorder::start("test", progress.clone());
    rec.unit_done(0).unwrap();
    progress.cancel.store(true, Ordering::Relaxed);
    assert!(matches!(rec.unit_done(0), Err(FsbenchError::Interrupted)));
}

#[test]
fn errno_names() {
    assert_eq!(errno_name(libc::EMLINK), "EMLINK");
    assert_eq!(errno_name(9999), "errno 9999");
}
