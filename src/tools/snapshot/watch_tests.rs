use super::*;

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = crate::platform::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::write(root.join("src/a.rs"), "a").unwrap();
    std::fs::write(root.join("src/deep/b.rs"), "b").unwrap();
    std::fs::write(root.join("gone.txt"), "g").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n*.o\n").unwrap();
    std::fs::create_dir(root.join("target")).unwrap();
    (dir, root)
}

fn watch(root: &Path) -> Watch {
    let w = Watch::with_mode(vec![root.to_owned()], false);
    drop(w.mark());
    assert!(w.watching(), "inotify is available on the test machines");
    w
}

#[test]
fn events_give_created_changed_deleted_and_skip_ignored() {
    let (_d, root) = project();
    let w = watch(&root);
    {
        let state = lock(&w.state);
        let State::Watching(s) = &*state else {
            panic!()
        };
        assert!(s.dirs.contains(&root.join("src/deep")));
        assert!(!s.dirs.contains(&root.join("target")), "ignored: no watch");
    }
    let mark = w.mark();
    std::fs::write(root.join("src/a.rs"), "changed").unwrap();
    std::fs::remove_file(root.join("gone.txt")).unwrap();
    std::fs::create_dir_all(root.join("src/new/inner")).unwrap();
    std::fs::write(root.join("src/new/inner/c.rs"), "c").unwrap();
    std::fs::write(root.join("src/x.o"), "ignored").unwrap();
    std::fs::write(root.join("target/out"), "ignored").unwrap();
    std::fs::write(root.join(".hidden"), "hidden").unwrap();
    let (c, next) = w.since(&mark);
    assert_eq!(c.created, [root.join("src/new/inner/c.rs")]);
    assert_eq!(c.changed, [root.join("src/a.rs")]);
    assert_eq!(c.deleted, [root.join("gone.txt")]);
    // The new directory is watched: a file made there next is seen.
    std::fs::write(root.join("src/new/inner/d.rs"), "d").unwrap();
    let (c, _) = w.since(&next);
    assert_eq!(c.created, [root.join("src/new/inner/d.rs")]);
    assert!(c.changed.is_empty() && c.deleted.is_empty(), "{c:?}");
}

/// `sed -i` writes a temporary file and renames it over the original.
#[test]
fn a_replaced_file_counts_as_changed() {
    let (_d, root) = project();
    let w = watch(&root);
    let mark = w.mark();
    // Same size and the same mtime, as when both writes fall in one clock
    // tick: only the rename tells (Windows stamps carry no inode).
    let mtime = std::fs::metadata(root.join("src/a.rs"))
        .unwrap()
        .modified()
        .unwrap();
    let tmp = std::fs::File::create(root.join("src/a.tmp")).unwrap();
    std::io::Write::write_all(&mut &tmp, b"a").unwrap();
    tmp.set_modified(mtime).unwrap();
    drop(tmp);
    std::fs::rename(root.join("src/a.tmp"), root.join("src/a.rs")).unwrap();
    let (c, _) = w.since(&mark);
    assert_eq!(c.changed, [root.join("src/a.rs")]);
    assert!(c.created.is_empty() && c.deleted.is_empty(), "{c:?}");
}

/// A background command's mark outlives other commands' marks.
#[test]
fn an_old_mark_sees_everything_since() {
    let (_d, root) = project();
    let w = watch(&root);
    let old = w.mark();
    std::fs::write(root.join("one"), "1").unwrap();
    let inner = w.mark();
    std::fs::write(root.join("two"), "2").unwrap();
    let (c, _) = w.since(&inner);
    assert_eq!(c.created, [root.join("two")]);
    drop(inner);
    std::fs::remove_file(root.join("one")).unwrap();
    let (c, _) = w.since(&old);
    assert_eq!(c.created, [root.join("two")], "one came and went");
}

/// Hostile: a command deletes the root and makes it again.
#[test]
fn a_recreated_root_is_watched_again() {
    let (_d, root) = project();
    let w = watch(&root);
    let mark = w.mark();
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("gone.txt"), "again").unwrap();
    std::fs::write(root.join("fresh"), "f").unwrap();
    let (c, next) = w.since(&mark);
    assert_eq!(c.created, [root.join("fresh")]);
    assert_eq!(c.changed, [root.join("gone.txt")]);
    assert_eq!(
        c.deleted,
        // (.gitignore is hidden: never tracked.)
        [root.join("src/a.rs"), root.join("src/deep/b.rs")]
    );
    std::fs::write(root.join("later"), "l").unwrap();
    let (c, _) = w.since(&next);
    assert_eq!(c.created, [root.join("later")]);
}

/// Hostile: a directory replaced by a link out of the roots gets no
/// watch, and what is behind the link is not reported.
#[test]
fn links_out_of_the_roots_are_not_followed() {
    let (_d, root) = project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    let w = watch(&root);
    let mark = w.mark();
    std::fs::remove_dir_all(root.join("src/deep")).unwrap();
    crate::platform::fs::symlink(outside.path(), root.join("src/deep")).unwrap();
    crate::platform::fs::symlink(outside.path(), root.join("link")).unwrap();
    let (c, next) = w.since(&mark);
    assert_eq!(c.deleted, [root.join("src/deep/b.rs")]);
    assert!(c.created.is_empty(), "{c:?}");
    {
        let state = lock(&w.state);
        let State::Watching(s) = &*state else {
            panic!()
        };
        assert!(s.dirs.iter().all(|d| d.starts_with(&root) && real_dir(d)));
        assert!(!s.dirs.contains(&root.join("link")));
    }
    std::fs::write(outside.path().join("secret2"), "s").unwrap();
    let (c, _) = w.since(&next);
    assert!(c.is_empty(), "{c:?}");
}

/// Lost events (`IN_Q_OVERFLOW`): a fresh walk against the kept stamps
/// gives the same answer.
#[test]
fn lost_events_are_recovered_by_a_walk() {
    let (_d, root) = project();
    let w = watch(&root);
    let mark = w.mark();
    std::fs::write(root.join("src/a.rs"), "changed").unwrap();
    std::fs::remove_file(root.join("gone.txt")).unwrap();
    std::fs::create_dir(root.join("made")).unwrap();
    std::fs::write(root.join("made/n"), "n").unwrap();
    let Kind::Watch { generation, .. } = &mark.0 else {
        panic!()
    };
    let mut state = lock(&w.state);
    let State::Watching(s) = &mut *state else {
        panic!()
    };
    s.rescan(&w.roots);
    let c = s.changes_since(*generation);
    assert_eq!(c.created, [root.join("made/n")]);
    assert_eq!(c.changed, [root.join("src/a.rs")]);
    assert_eq!(c.deleted, [root.join("gone.txt")]);
    assert!(s.dirs.contains(&root.join("made")));
}

#[test]
fn the_walk_mode_gives_the_same_answer() {
    let (_d, root) = project();
    let w = Watch::with_mode(vec![root.clone()], true);
    let mark = w.mark();
    assert!(!w.watching());
    std::fs::write(root.join("src/a.rs"), "changed").unwrap();
    std::fs::write(root.join("new\nline"), "n").unwrap();
    let (c, _) = w.since(&mark);
    assert_eq!(c.changed, [root.join("src/a.rs")]);
    assert_eq!(c.created, [root.join("new\nline")]);
}
