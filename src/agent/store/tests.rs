//! Unit tests of the session store (kept apart: store/mod.rs is long enough).
use super::*;

fn summary(id: &str) -> Summary {
    Summary {
        session_id: id.into(),
        cwd: "/p".into(),
        additional_directories: vec![],
        title: None,
        created_at: now_rfc3339(),
        updated_at: now_rfc3339(),
    }
}

#[test]
fn round_trip_and_torn_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    let log = store.create(&summary("s1"));
    log.append(&Record::User {
        prompt: vec![ContentBlock::text("hi")],
        message: StoredMessage::User {
            parts: vec![StoredPart::Text { text: "hi".into() }],
        },
    })
    .unwrap();
    log.append(&Record::Title { title: "hi".into() }).unwrap();
    // A torn write: half a record at the end.
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("sessions/s1.jsonl"))
        .unwrap()
        .write_all(br#"{"t":"assistant","text":"hal"#)
        .unwrap();
    let records = store.read("s1").unwrap();
    assert_eq!(records.len(), 3);
    assert!(matches!(records[0], Record::Meta { .. }));
    assert!(matches!(records[2], Record::Title { .. }));
    // Sidecar missing → rebuilt from the log.
    std::fs::remove_file(dir.path().join("sessions/s1.json")).unwrap();
    let listed = store.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].title.as_deref(), Some("hi"));
    store.delete("s1").unwrap();
    store.delete("s1").unwrap();
    assert!(store.list().is_empty());
    assert!(matches!(store.read("s1"), Err(StoreError::Missing(_))));
}

#[test]
fn a_full_disk_loses_nothing_once_it_has_room_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    std::fs::create_dir_all(store.dir()).unwrap();
    let path = store.dir().join("s2.jsonl");
    // Every write to /dev/full fails with ENOSPC.
    crate::platform::fs::symlink("/dev/full", &path).unwrap();
    let log = store.open("s2");
    let title = |t: &str| Record::Title { title: t.into() };
    assert!(log.append(&title("one")).is_err());
    assert!(log.append(&title("two")).is_err());
    std::fs::remove_file(&path).unwrap();
    log.append(&title("three")).unwrap();
    let titles: Vec<Record> = store.read("s2").unwrap();
    assert_eq!(titles, vec![title("one"), title("two"), title("three")]);
}

#[test]
fn sessions_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(&dir.path().join("data"));
    let log = store.create(&summary("s3"));
    log.append(&Record::Title { title: "t".into() }).unwrap();
    // Unix modes; `None` on Windows (the profile's ACL).
    let mode =
        |p: &Path| crate::platform::fs::mode(&std::fs::metadata(p).unwrap()).map(|m| m & 0o777);
    assert!(mode(store.dir()).is_none_or(|m| m == 0o700));
    assert!(mode(&store.dir().join("s3.jsonl")).is_none_or(|m| m == 0o600));
    assert!(mode(&store.dir().join("s3.json")).is_none_or(|m| m == 0o600));
}

#[test]
fn ids_are_restricted() {
    assert!(valid_id("sess_0123abc"));
    assert!(!valid_id("../etc/passwd"));
    assert!(!valid_id(""));
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Store::new(dir.path()).read("../x"),
        Err(StoreError::Missing(_))
    ));
}

#[test]
fn unknown_records_are_skipped() {
    let r: Record = serde_json::from_str(r#"{"t":"future_thing","x":1}"#).unwrap();
    assert_eq!(r, Record::Unknown);
}
