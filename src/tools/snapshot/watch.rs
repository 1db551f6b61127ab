//! What a command changed, without walking the project twice per command
//! (issue 19 §2–3: ≤ 10 ms around a command in a 5 000-file project).
//!
//! A [`Watch`] belongs to one session and starts at its first command (not
//! at `session/new`: start-up and the idle session's memory stay as they
//! were). Starting walks the roots once (the walk [`Snapshot::take`] does)
//! and puts an inotify watch (the maintained `notify` crate) on every
//! directory that walk entered: ignore rules are honoured, so `target/`,
//! `node_modules/` and `.git/` cost no watch and no event, and symbolic
//! links are never followed (a watch is only added on a path that is a real
//! directory inside the roots; see [`real_dir`]). From then on the watch
//! keeps the stamps of the files, and a command's changes are the paths
//! with events between its [`Mark`] and the end of the command: only those
//! are listed again (their directory, through the same walker, for the
//! ignore rules) and stat'ed. New directories get watches as they appear;
//! deleted ones lose theirs.
//!
//! All events of a command have arrived once a marker does: before reading
//! the events, a file is created in a private directory watched by the same
//! inotify instance. The kernel queues the events of one instance in order,
//! and the command's own events were queued before it exited, so when the
//! marker's event comes out of the channel every earlier event has too. No
//! settling delay; a marker that does not come back within [`MARKER_WAIT`]
//! (it always does unless the machine stalls) counts as lost events.
//!
//! Fallbacks, each logged: the watch cannot be set up (no inotify, the
//! inotify watch limit reached) → every command walks the roots before and
//! after, as [`Snapshot`] does; events were lost (`IN_Q_OVERFLOW`, reported
//! by notify as a rescan) → a fresh walk, and the difference from the kept
//! stamps is what changed. `ACP_CODER_CHANGES=walk` forces the walk.
//!
//! A background command's changes count from its last read: its [`Mark`]
//! is kept, and the stamps a file had at any live mark stay in a journal
//! until the last mark before them is dropped.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind, RenameMode};
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};

use super::{Changes, MAX_ENTRIES, Snapshot, Stamp};
use crate::tools::search::walker;

/// How long the marker's event may take to come back.
const MARKER_WAIT: Duration = Duration::from_secs(5);

/// Where a command's changes are measured from.
pub struct Mark(Kind);

enum Kind {
    Walk(Snapshot),
    Watch { generation: u64, live: Live },
}

/// Live marks' generations, so the journal keeps what they need.
type Live = Arc<Mutex<BTreeMap<u64, usize>>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Drop for Mark {
    fn drop(&mut self) {
        if let Kind::Watch { generation, live } = &self.0 {
            let mut live = lock(live);
            if let Some(n) = live.get_mut(generation) {
                *n -= 1;
                if *n == 0 {
                    live.remove(generation);
                }
            }
        }
    }
}

/// What changed under a session's roots (see the module docs).
pub struct Watch {
    roots: Vec<PathBuf>,
    force_walk: bool,
    state: Mutex<State>,
    live: Live,
}

enum State {
    Idle,
    Walking,
    Watching(Box<Watching>),
}

impl Watch {
    /// Nothing starts until the first [`Watch::mark`].
    pub fn new(roots: Vec<PathBuf>) -> Self {
        let force_walk = std::env::var("ACP_CODER_CHANGES").is_ok_and(|v| v == "walk");
        Self::with_mode(roots, force_walk)
    }

    pub fn with_mode(roots: Vec<PathBuf>, force_walk: bool) -> Self {
        Watch {
            roots: roots
                .iter()
                .map(|r| crate::platform::fs::canonicalize(r).unwrap_or_else(|_| r.clone()))
                .collect(),
            force_walk,
            state: Mutex::new(State::Idle),
            live: Arc::default(),
        }
    }

    /// Whether changes come from inotify events (false: from walks).
    pub fn watching(&self) -> bool {
        matches!(*lock(&self.state), State::Watching(_))
    }

    /// Now, as a point to measure changes from. Blocking.
    pub fn mark(&self) -> Mark {
        let mut state = lock(&self.state);
        if let State::Idle = *state {
            let (next, mark) = self.start();
            *state = next;
            return mark;
        }
        self.now(&mut state)
    }

    /// Now, as a point to measure changes from, with the files under the
    /// roots at that point (and whether the list was cut short at
    /// [`MAX_ENTRIES`]): what a command may change. Blocking.
    pub(crate) fn mark_listed(&self) -> (Mark, Vec<(PathBuf, Stamp)>, bool) {
        let mark = self.mark();
        let state = lock(&self.state);
        let (files, truncated) = match (&mark.0, &*state) {
            (Kind::Walk(snap), _) => (&snap.files, snap.truncated),
            (Kind::Watch { .. }, State::Watching(w)) => (&w.files, w.truncated),
            _ => return (mark, Vec::new(), true),
        };
        let list = files.iter().map(|(p, s)| (p.clone(), *s)).collect();
        drop(state);
        (mark, list, truncated)
    }

    /// What changed since `mark`, and a mark for now. Blocking.
    pub fn since(&self, mark: &Mark) -> (Changes, Mark) {
        let mut state = lock(&self.state);
        match &mark.0 {
            Kind::Watch { generation, .. } => {
                if let State::Watching(w) = &mut *state {
                    let ok = w.sync(&self.roots).is_ok();
                    let changes = w.changes_since(*generation);
                    if ok {
                        return (changes, w.mark(&self.live));
                    }
                    *state = State::Walking;
                    return (changes, self.now(&mut state));
                }
                // The watch gave up after this mark was taken: what
                // happened before the switch is unknown.
                tracing::warn!(
                    "changed files: unknown since a mark taken before the watch stopped"
                );
                let changes = Changes {
                    incomplete: true,
                    ..Changes::default()
                };
                (changes, self.now(&mut state))
            }
            Kind::Walk(before) => {
                let next = self.now(&mut state);
                let changes = match (&next.0, &*state) {
                    (Kind::Walk(after), _) => before.diff(after),
                    (Kind::Watch { .. }, State::Watching(w)) => before.diff(&w.snapshot()),
                    (Kind::Watch { .. }, _) => before.diff(&Snapshot::take(&self.roots)),
                };
                (changes, next)
            }
        }
    }

    fn now(&self, state: &mut State) -> Mark {
        if let State::Watching(w) = state {
            if w.sync(&self.roots).is_ok() {
                return w.mark(&self.live);
            }
            *state = State::Walking;
        }
        Mark(Kind::Walk(Snapshot::take(&self.roots)))
    }

    fn start(&self) -> (State, Mark) {
        let t0 = Instant::now();
        let (snap, dirs) = super::walk::walk(&self.roots);
        if self.force_walk {
            tracing::info!(
                "changed files: walking the roots around each command (ACP_CODER_CHANGES=walk)"
            );
            return (State::Walking, Mark(Kind::Walk(snap)));
        }
        match Watching::start(snap.clone(), dirs) {
            Ok(mut w) => {
                tracing::info!(
                    files = w.files.len(),
                    dirs = w.dirs.len(),
                    ms = t0.elapsed().as_millis() as u64,
                    "changed files: watching the roots"
                );
                let mark = w.mark(&self.live);
                (State::Watching(Box::new(w)), mark)
            }
            Err(e) => {
                tracing::warn!(error = %e, "changed files: cannot watch the roots, walking them around each command instead");
                (State::Walking, Mark(Kind::Walk(snap)))
            }
        }
    }
}

/// The private directory the marker files go to; removed on drop.
struct SyncDir(PathBuf);

impl SyncDir {
    fn create() -> std::io::Result<SyncDir> {
        use crate::platform::fs::OwnerOnly as _;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        loop {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("acp-coder-watch-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().owner_only().create(&dir) {
                Ok(()) => return Ok(SyncDir(crate::platform::fs::canonicalize(&dir)?)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for SyncDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The inotify-backed state.
struct Watching {
    watcher: RecommendedWatcher,
    rx: Receiver<notify::Result<notify::Event>>,
    sync_dir: SyncDir,
    markers: u64,
    files: HashMap<PathBuf, Stamp>,
    truncated: bool,
    dirs: HashSet<PathBuf>,
    generation: u64,
    /// `(generation, path, stamp before, replaced)`, oldest first.
    /// `replaced`: a rename or create put another file at the path, which
    /// is a change even when the stamps match (Windows stamps carry no
    /// file identity, and a same-size file written in the same clock tick
    /// has the same size and mtime).
    journal: Vec<(u64, PathBuf, Option<Stamp>, bool)>,
    /// A watch could not be added (the inotify limit): stop watching.
    gave_up: bool,
}

/// The watch stopped (the inotify limit); the session walks from now on.
struct GaveUp;

impl Watching {
    fn start(snap: Snapshot, dirs: Vec<PathBuf>) -> notify::Result<Watching> {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut watcher = RecommendedWatcher::new(tx, notify::Config::default())?;
        let sync_dir = SyncDir::create().map_err(notify::Error::io)?;
        watcher.watch(&sync_dir.0, RecursiveMode::NonRecursive)?;
        let mut w = Watching {
            watcher,
            rx,
            sync_dir,
            markers: 0,
            files: snap.files,
            truncated: snap.truncated,
            dirs: HashSet::with_capacity(dirs.len()),
            generation: 0,
            journal: Vec::new(),
            gave_up: false,
        };
        for dir in dirs {
            w.add_watch(dir)?;
        }
        Ok(w)
    }

    /// Watches `dir` if it is still a real directory inside the roots.
    fn add_watch(&mut self, dir: PathBuf) -> notify::Result<()> {
        if self.dirs.contains(&dir) || !real_dir(&dir) {
            return Ok(());
        }
        match self.watcher.watch(&dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                self.dirs.insert(dir);
                Ok(())
            }
            Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => Err(e),
            // Gone again already: its parent's events cover it.
            Err(e) => {
                tracing::debug!(error = %e, dir = %dir.display(), "no watch added");
                Ok(())
            }
        }
    }

    fn mark(&mut self, live: &Live) -> Mark {
        let generation = self.generation;
        self.generation += 1;
        *lock(live).entry(generation).or_insert(0) += 1;
        // Only live marks read the journal.
        let oldest = lock(live).keys().next().copied();
        match oldest {
            Some(g) => self.journal.retain(|(at, ..)| *at > g),
            None => self.journal.clear(),
        }
        Mark(Kind::Watch {
            generation,
            live: live.clone(),
        })
    }

    /// The files now, as a [`Snapshot`].
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            files: self.files.clone(),
            truncated: self.truncated,
        }
    }

    /// Brings the stamps up to date with every event queued so far.
    fn sync(&mut self, roots: &[PathBuf]) -> Result<(), GaveUp> {
        let (dirty, lost) = self.drain();
        if lost {
            tracing::warn!(
                "changed files: inotify events were lost (queue overflow); walking the roots to find what changed"
            );
            self.rescan(roots);
        } else {
            self.apply(roots, dirty);
        }
        if self.gave_up {
            tracing::warn!(
                "changed files: the inotify watch limit was reached; walking the roots around each command from now on"
            );
            return Err(GaveUp);
        }
        Ok(())
    }

    /// The paths with events up to a fresh marker, and whether events were
    /// lost.
    fn drain(&mut self) -> (Vec<(PathBuf, Seen)>, bool) {
        self.markers += 1;
        let marker = self.sync_dir.0.join(self.markers.to_string());
        let mut lost = std::fs::write(&marker, b"").is_err();
        let deadline = Instant::now() + MARKER_WAIT;
        let mut dirty = Vec::new();
        while !lost {
            let ev = match self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(Ok(ev)) => ev,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "changed files: watch error");
                    lost = true;
                    break;
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    lost = true;
                    break;
                }
            };
            if ev.need_rescan() {
                lost = true;
            }
            if ev.paths.contains(&marker) {
                break;
            }
            if matches!(ev.kind, EventKind::Access(a) if a != AccessKind::Close(AccessMode::Write))
            {
                continue;
            }
            for (i, p) in ev.paths.into_iter().enumerate() {
                if !p.starts_with(&self.sync_dir.0) {
                    dirty.push((p, Seen::of(ev.kind, i)));
                }
            }
        }
        let _ = std::fs::remove_file(&marker);
        (dirty, lost)
    }

    fn note(&mut self, path: &Path, now: Option<Stamp>) {
        self.note_as(path, now, false);
    }

    /// [`Self::note`], where `replaced` says another file was put at the
    /// path (a change even if the stamps match).
    fn note_as(&mut self, path: &Path, now: Option<Stamp>, replaced: bool) {
        let old = self.files.get(path).copied();
        let replaced = replaced && old.is_some() && now.is_some();
        if old == now && !replaced {
            return;
        }
        self.journal
            .push((self.generation, path.to_owned(), old, replaced));
        match now {
            Some(s) if self.files.len() < MAX_ENTRIES || old.is_some() => {
                self.files.insert(path.to_owned(), s);
            }
            Some(_) => self.truncated = true,
            None => {
                self.files.remove(path);
            }
        }
    }

    /// Lost events: the walk says what the files are now.
    fn rescan(&mut self, roots: &[PathBuf]) {
        let (snap, dirs) = super::walk::walk(roots);
        let old: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| !snap.files.contains_key(*p))
            .cloned()
            .collect();
        for p in old {
            self.note(&p, None);
        }
        for (p, s) in &snap.files {
            self.note(p, Some(*s));
        }
        self.truncated = snap.truncated;
        let now: HashSet<PathBuf> = dirs.iter().cloned().collect();
        let stale: Vec<PathBuf> = self.dirs.difference(&now).cloned().collect();
        for d in stale {
            let _ = self.watcher.unwatch(&d);
            self.dirs.remove(&d);
        }
        for d in dirs {
            if self.add_watch(d).is_err() {
                self.gave_up = true;
            }
        }
    }

    /// Updates the stamps of the paths with events.
    fn apply(&mut self, roots: &[PathBuf], dirty: Vec<(PathBuf, Seen)>) {
        let mut by_dir: HashMap<PathBuf, HashSet<OsString>> = HashMap::new();
        let mut replaced: HashSet<PathBuf> = HashSet::new();
        for (p, seen) in dirty {
            if seen == Seen::Replaced {
                replaced.insert(p.clone());
            }
            if seen == Seen::Gone && self.dirs.contains(&p) {
                // Its watch is gone; a directory there now is a new one.
                self.remove_tree(&p);
            }
            if let (Some(dir), Some(name)) = (p.parent(), p.file_name()) {
                by_dir
                    .entry(dir.to_owned())
                    .or_default()
                    .insert(name.to_owned());
            }
        }
        for (dir, names) in by_dir {
            if !self.dirs.contains(&dir) {
                continue;
            }
            if !real_dir(&dir) {
                self.remove_tree(&dir);
                continue;
            }
            // The common case, a tracked file written again, needs no
            // listing: the ignore rules already let it in.
            let mut names: Vec<OsString> = names.into_iter().collect();
            names.retain(|name| {
                let path = dir.join(name);
                if !self.files.contains_key(&path) {
                    return true;
                }
                match Stamp::lstat(&path) {
                    Some(now) => {
                        self.note_as(&path, Some(now), replaced.contains(&path));
                        false
                    }
                    None => true,
                }
            });
            if names.is_empty() {
                continue;
            }
            let listed = list(&dir);
            for name in names {
                let path = dir.join(&name);
                match listed.get(&name) {
                    Some(true) => {
                        self.note(&path, None);
                        if !self.dirs.contains(&path) {
                            self.add_tree(&path);
                        }
                    }
                    Some(false) => {
                        if self.dirs.contains(&path) {
                            self.remove_tree(&path);
                        }
                        let now = Stamp::lstat(&path);
                        self.note_as(&path, now, replaced.contains(&path));
                    }
                    None => {
                        if self.dirs.contains(&path) {
                            self.remove_tree(&path);
                        }
                        self.note(&path, None);
                    }
                }
            }
        }
        // A root that was deleted (and maybe made again) lost its watch.
        for root in roots {
            if !self.dirs.contains(root) && real_dir(root) {
                self.add_tree(root);
            }
        }
    }

    /// A new directory: its files are new, its directories get watches.
    fn add_tree(&mut self, dir: &Path) {
        let (snap, dirs) = super::walk::walk(std::slice::from_ref(&dir.to_owned()));
        for d in dirs {
            if self.add_watch(d).is_err() {
                self.gave_up = true;
            }
        }
        for (p, s) in snap.files {
            self.note(&p, Some(s));
        }
    }

    /// A directory went away: so did everything under it.
    fn remove_tree(&mut self, dir: &Path) {
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| p.starts_with(dir))
            .cloned()
            .collect();
        for p in gone {
            self.note(&p, None);
        }
        let dirs: Vec<PathBuf> = self
            .dirs
            .iter()
            .filter(|d| d.starts_with(dir))
            .cloned()
            .collect();
        for d in dirs {
            let _ = self.watcher.unwatch(&d);
            self.dirs.remove(&d);
        }
    }

    /// What changed since the mark of `generation`.
    fn changes_since(&self, generation: u64) -> Changes {
        // Per path: the stamp at the mark, and whether it was replaced since.
        let mut first: HashMap<&Path, (Option<Stamp>, bool)> = HashMap::new();
        for (at, path, old, replaced) in &self.journal {
            if *at > generation {
                first.entry(path.as_path()).or_insert((*old, false)).1 |= *replaced;
            }
        }
        let mut c = Changes {
            incomplete: self.truncated,
            ..Changes::default()
        };
        for (path, (old, replaced)) in first {
            match (old, self.files.get(path)) {
                (None, Some(_)) => c.created.push(path.to_owned()),
                (Some(_), None) => c.deleted.push(path.to_owned()),
                (Some(a), Some(b)) if replaced || a != *b => c.changed.push(path.to_owned()),
                _ => {}
            }
        }
        c.created.sort();
        c.changed.sort();
        c.deleted.sort();
        c
    }
}

/// What an event says of one of its paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// Written, or its metadata changed.
    Touched,
    /// Went away (a deleted or moved-out directory loses its watch with it).
    Gone,
    /// Another file was moved or created there (`sed -i`, an editor's
    /// atomic save).
    Replaced,
}

impl Seen {
    /// What `kind` says of its `index`-th path (a rename with both names
    /// lists the old one first).
    fn of(kind: EventKind, index: usize) -> Seen {
        match kind {
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(RenameMode::From)) => {
                Seen::Gone
            }
            EventKind::Modify(ModifyKind::Name(RenameMode::Both)) if index == 0 => Seen::Gone,
            EventKind::Create(_)
            | EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Both)) => {
                Seen::Replaced
            }
            _ => Seen::Touched,
        }
    }
}

/// Whether `dir` is a directory reached without a symbolic link (the
/// roots are canonical, so a path under them is its own canonical form
/// unless a link was put in its way).
fn real_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
        && crate::platform::fs::canonicalize(dir).is_ok_and(|c| c == dir)
}

/// The entries of `dir` the walker keeps (ignore rules, hidden entries,
/// no links): name → whether it is a directory.
fn list(dir: &Path) -> HashMap<OsString, bool> {
    let mut out = HashMap::new();
    for entry in walker(dir).max_depth(Some(1)).build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() || kind.is_file() {
            out.insert(entry.file_name().to_owned(), kind.is_dir());
        }
    }
    out
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
