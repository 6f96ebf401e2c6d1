//! Writing output files: every tool's `-o`, reports, kernels and `.npy`
//! outputs go through here, so a failed run never leaves a partial file, a
//! replaced file keeps its mode, and the outputs of one invocation appear
//! together or not at all ([`Batch`]).
//!
//! Paths stay [`Path`]s (`OsStr`) from the command line to the file system:
//! a name that is not UTF-8 is written where it says, and only messages show
//! it lossily.
//!
//! A utility below every layer: it knows files, not graphs.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Why an output could not be written, naming where.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot write '{}': {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
    #[error("cannot write to stdout: {0}")]
    Stdout(std::io::Error),
    /// Two outputs of one invocation reach the same file: one would silently
    /// replace the other.
    #[error("cannot write '{}': another output of this run goes to the same file{}", path.display(), also(path, other))]
    Twice { path: PathBuf, other: PathBuf },
    /// An output would replace a file the run reads (a trace or a report
    /// written over the graph it came from).
    #[error("cannot write '{}': it is a file this run reads{}", path.display(), also(path, input))]
    Input { path: PathBuf, input: PathBuf },
    /// A failure after some files were moved into place, and putting one of
    /// them back failed too: what is left is said, not hidden.
    #[error("{error}; and restoring '{}' failed: {source} (the old file is kept as '{}')", path.display(), kept.display())]
    Restore { error: Box<OutputError>, path: PathBuf, kept: PathBuf, source: std::io::Error },
}

fn also(path: &Path, other: &Path) -> String {
    if path == other { String::new() } else { format!(" ('{}')", other.display()) }
}

impl OutputError {
    /// Whether this is stdout's reader having gone away (`| head`), which a
    /// command-line tool takes as the end of its run, not as an error.
    pub fn is_closed_pipe(&self) -> bool {
        matches!(self, OutputError::Stdout(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// Where output goes:
/// - stdout, for no path, `-` or `/dev/stdout`;
/// - a regular file (new, or reached through symlinks): a temporary file
///   beside it, moved into place only when its [`Batch`] commits, so a
///   failed run never leaves a partial file (a dropped temporary file
///   deletes itself) and a symlink on the way stays a symlink;
/// - anything else (a device such as `/dev/null`, a FIFO, a socket), or a
///   regular file with other hard links: held in memory and written through
///   the path at the commit: a device node or FIFO is never replaced, and
///   every link keeps seeing the file.
pub enum Sink {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    /// `path` as given (what messages name); `target`, the file it reaches.
    File { path: PathBuf, target: PathBuf, file: LazyTemp, mode: Option<u32> },
    /// Held in memory, then written into the existing destination in place
    /// at the commit (never replaced). `linked`: a regular file with other
    /// hard links (truncated when written, and its old bytes can be put
    /// back); otherwise a device, FIFO or socket (never truncated; what
    /// reached it cannot be taken back).
    InPlace { path: PathBuf, target: PathBuf, bytes: Vec<u8>, linked: bool },
}

/// Whether `path` means stdout.
fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-" || path.as_os_str() == "/dev/stdout"
}

impl Sink {
    /// A sink for `path` (`None`, `-` and `/dev/stdout` are stdout).
    pub fn open<P: AsRef<Path> + ?Sized>(path: Option<&P>) -> Result<Sink, OutputError> {
        let Some(path) = path.map(AsRef::as_ref).filter(|p| !is_stdout(p)) else {
            return Ok(Sink::Stdout(std::io::BufWriter::with_capacity(1 << 16, std::io::stdout())));
        };
        let cannot = |source| OutputError::File { path: path.to_path_buf(), source };
        if path.as_os_str().is_empty() {
            return Err(cannot(std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path is empty")));
        }
        let target = resolve_links(path).map_err(cannot)?;
        let in_place = |linked| Sink::InPlace { path: path.to_path_buf(), target: target.clone(), bytes: Vec::new(), linked };
        match std::fs::metadata(&target) {
            Ok(meta) if meta.is_dir() => Err(cannot(std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory"))),
            Ok(meta) if !meta.is_file() => Ok(in_place(false)),
            Ok(meta) if hard_links(&meta) > 1 => Ok(in_place(true)),
            _ => {
                // A replaced file keeps its mode; a new one gets what a plain
                // `open(O_CREAT, 0666)` would, the umask applied (tempfile's own
                // default is 0600).
                let mode = existing_mode(&target);
                let file = LazyTemp::probed(parent_of(&target)).map_err(cannot)?;
                Ok(Sink::File { path: path.to_path_buf(), target, file, mode })
            }
        }
    }

    /// Push what was written so far to stdout (a no-op for files, which
    /// appear whole at the end).
    pub fn flush_stdout(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File { .. } | Sink::InPlace { .. } => Ok(()),
        }
    }

    /// `e`, said of this sink's destination.
    pub fn error(&self, e: std::io::Error) -> OutputError {
        match self {
            Sink::Stdout(_) => OutputError::Stdout(e),
            Sink::File { path, .. } | Sink::InPlace { path, .. } => OutputError::File { path: path.clone(), source: e },
        }
    }

    /// Flush, and move a file into place (or write it through its path): a
    /// batch of one.
    pub fn finish(self) -> Result<(), OutputError> {
        let mut batch = Batch::default();
        batch.add_sink(self);
        batch.finish()
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Stdout(out) => out.write(buf),
            Sink::File { file, .. } => file.write(buf),
            Sink::InPlace { bytes, .. } => bytes.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File { file, .. } => file.flush(),
            Sink::InPlace { .. } => Ok(()),
        }
    }
}

/// A file's output on its way: the temporary file beside the destination,
/// made when the first byte is written (or at the commit). One made when
/// the run started was left behind, empty, by a run killed before it
/// printed anything (SIGTERM, an abort: an adversarial run); the folder is
/// still tried when the sink opens, so an unwritable one is said first.
pub struct LazyTemp {
    dir: PathBuf,
    file: Option<std::io::BufWriter<tempfile::NamedTempFile>>,
}

impl LazyTemp {
    /// A temporary file is made in `dir` and removed at once: the folder takes one.
    fn probed(dir: &Path) -> std::io::Result<LazyTemp> {
        drop(new_temp_file(dir)?);
        Ok(LazyTemp { dir: dir.to_path_buf(), file: None })
    }

    fn file(&mut self) -> std::io::Result<&mut std::io::BufWriter<tempfile::NamedTempFile>> {
        if self.file.is_none() {
            self.file = Some(std::io::BufWriter::with_capacity(1 << 20, new_temp_file(&self.dir)?));
        }
        Ok(self.file.as_mut().expect("just made"))
    }

    /// The temporary file, everything written flushed to it.
    fn into_temp(mut self) -> std::io::Result<tempfile::NamedTempFile> {
        self.file()?;
        self.file.take().expect("made above").into_inner().map_err(|e| e.into_error())
    }
}

impl Write for LazyTemp {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file()?.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// Write a whole file atomically (`-` is stdout).
pub fn write_file<P: AsRef<Path> + ?Sized>(path: &P, bytes: &[u8]) -> Result<(), OutputError> {
    write_file_reading(path, bytes, &[])
}

/// [`write_file`] for a run that read `inputs`: a path that reaches one of
/// them is refused ([`Batch::input`]).
pub fn write_file_reading<P: AsRef<Path> + ?Sized>(path: &P, bytes: &[u8], inputs: &[&Path]) -> Result<(), OutputError> {
    let mut batch = Batch::default();
    inputs.iter().for_each(|input| batch.input(input));
    batch.add(path.as_ref(), bytes.to_vec());
    batch.finish()
}

/// Every output of one invocation, which appear together or not at all.
///
/// [`Batch::add`] and [`Batch::add_sink`] only record them. [`Batch::finish`]
/// first refuses two outputs that reach the same file, then stages: creates
/// missing folders and writes every regular file to a temporary file beside
/// its destination. Only when all are staged does it commit: stdout is
/// flushed, each regular file is moved into place by one `rename` (the file
/// it replaces kept aside, as a hard link or a copy, until the end), files
/// with other hard links are rewritten in place (their old bytes kept), and
/// devices and FIFOs are written last. A failure at any point puts back
/// every file already replaced, deletes every file created, and removes the
/// folders it made. What cannot be undone: bytes that reached stdout, or a
/// device or FIFO before a later one failed.
#[derive(Default)]
pub struct Batch {
    entries: Vec<Entry>,
    /// Files the run reads ([`Batch::input`]), each with whether the sink
    /// may replace it ([`Batch::input_rewritten_in_place`]).
    inputs: Vec<(PathBuf, InPlace)>,
}

/// Whether the sink (`-o`) may replace an input file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InPlace {
    Allowed,
    Refused,
}

enum Entry {
    Bytes(PathBuf, Vec<u8>),
    Open(Sink),
}

impl Batch {
    /// Record `bytes` for `path` (nothing is written yet).
    pub fn add(&mut self, path: impl Into<PathBuf>, bytes: Vec<u8>) {
        self.entries.push(Entry::Bytes(path.into(), bytes));
    }

    /// A file this run reads: no output may replace it (a trace, a report,
    /// a kernel, an `.npy` output or `-o` written over a device profile or
    /// an input the run came from is refused).
    pub fn input(&mut self, path: impl Into<PathBuf>) {
        self.inputs.push((path.into(), InPlace::Refused));
    }

    /// The graph a run rewrites: as [`Batch::input`], except that the sink
    /// ([`Batch::add_sink`], `-o`) may replace it: `rlx-opt g.graph -o
    /// g.graph` rewrites its graph in place, as mlir-opt does. (Every
    /// input once was: `-o` silently replaced the device profile a pass
    /// read, an adversarial run.)
    pub fn input_rewritten_in_place(&mut self, path: impl Into<PathBuf>) {
        self.inputs.push((path.into(), InPlace::Allowed));
    }

    /// Record a sink already written to (`-o`, streamed as graphs are
    /// printed); it is moved into place with the rest.
    pub fn add_sink(&mut self, sink: Sink) {
        self.entries.push(Entry::Open(sink));
    }

    /// Stage every output and commit them together.
    pub fn finish(self) -> Result<(), OutputError> {
        self.stage()?.commit()
    }

    /// Check for outputs that share a file, create folders and write every
    /// regular file beside its destination. A failure removes what it made.
    fn stage(self) -> Result<Staged, OutputError> {
        self.refuse_shared_files()?;
        let mut staged = Staged::default();
        for entry in self.entries {
            let sink = match entry {
                Entry::Open(sink) => sink,
                Entry::Bytes(path, bytes) => {
                    let cannot = |source| OutputError::File { path: path.clone(), source };
                    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                        let missing: Vec<_> = dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).map(Path::to_path_buf).collect();
                        // Created outermost first; recorded as each exists, so
                        // a failure half-way still removes what was made.
                        for d in missing.into_iter().rev() {
                            // The files staged so far go first: a folder
                            // holding one stayed (an adversarial run).
                            std::fs::create_dir(&d).or_else(|e| if d.is_dir() { Ok(()) } else { Err(e) }).map_err(|e| {
                                staged.discard();
                                cannot(e)
                            })?;
                            staged.created.push(d);
                        }
                    }
                    let sink = Sink::open(Some(&path)).and_then(|mut sink| {
                        sink.write_all(&bytes).map_err(|e| sink.error(e))?;
                        Ok(sink)
                    });
                    match sink {
                        Ok(sink) => sink,
                        Err(e) => {
                            staged.discard();
                            return Err(e);
                        }
                    }
                }
            };
            if let Err(e) = staged.push(sink) {
                staged.discard();
                return Err(e);
            }
        }
        Ok(staged)
    }

    /// Two outputs that reach one regular file (the same path, a symlink
    /// and its target, two hard links) are refused before anything is
    /// written: one would silently replace the other. A device or FIFO may
    /// take several (`-o /dev/null --fusion-report=/dev/null`).
    fn refuse_shared_files(&self) -> Result<(), OutputError> {
        // The inputs that are regular files (not a device or a FIFO; `-`
        // only where a file of that name is what was read).
        let inputs: Vec<(FileId, &Path, InPlace)> = self
            .inputs
            .iter()
            .filter(|(p, _)| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
            .map(|(p, in_place)| (FileId::of(&resolve_links(p).unwrap_or_else(|_| p.clone())), p.as_path(), *in_place))
            .collect();
        let mut seen: Vec<(FileId, &Path)> = Vec::new();
        for entry in &self.entries {
            let (path, target) = match entry {
                Entry::Bytes(path, _) => (path.as_path(), resolve_links(path).unwrap_or_else(|_| path.clone())),
                Entry::Open(Sink::File { path, target, .. }) => (path.as_path(), target.clone()),
                Entry::Open(Sink::InPlace { path, target, linked: true, .. }) => (path.as_path(), target.clone()),
                Entry::Open(Sink::InPlace { linked: false, .. } | Sink::Stdout(_)) => continue,
            };
            if is_stdout(path) || std::fs::metadata(&target).is_ok_and(|m| !m.is_file()) {
                continue;
            }
            let id = FileId::of(&target);
            let sink = matches!(entry, Entry::Open(_));
            if let Some((_, input, _)) = inputs.iter().find(|(input, _, in_place)| *input == id && !(sink && *in_place == InPlace::Allowed)) {
                return Err(OutputError::Input { path: path.to_path_buf(), input: input.to_path_buf() });
            }
            if let Some((_, other)) = seen.iter().find(|(seen, _)| *seen == id) {
                return Err(OutputError::Twice { path: path.to_path_buf(), other: other.to_path_buf() });
            }
            seen.push((id, path));
        }
        Ok(())
    }
}

/// What identifies a destination file: its device and inode where it
/// exists (so hard links match), else its absolute path with every part
/// that exists canonicalised and `.`/`..` resolved (so `out/../out/x` and a
/// symlinked folder match, also before `out` exists).
#[derive(PartialEq, Eq)]
enum FileId {
    Inode(u64, u64),
    Path(PathBuf),
}

impl FileId {
    fn of(target: &Path) -> FileId {
        #[cfg(unix)]
        if let Ok(meta) = std::fs::metadata(target) {
            use std::os::unix::fs::MetadataExt;
            return FileId::Inode(meta.dev(), meta.ino());
        }
        let absolute = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
        let mut real = PathBuf::new();
        for part in absolute.components() {
            match part {
                std::path::Component::CurDir => {}
                // `real` is canonical where it exists (no symlinks to climb
                // out of), and a folder that does not exist yet is made as a
                // real folder by the batch: `..` is its parent either way.
                std::path::Component::ParentDir => {
                    real.pop();
                }
                part => {
                    real.push(part);
                    if let Ok(resolved) = real.canonicalize() {
                        real = resolved;
                    }
                }
            }
        }
        FileId::Path(real)
    }
}

/// A batch written beside its destinations, not yet in place.
#[derive(Default)]
struct Staged {
    stdout: Vec<std::io::BufWriter<std::io::Stdout>>,
    /// Regular files: the path as given, the file it reaches, the staged copy.
    files: Vec<(PathBuf, PathBuf, tempfile::NamedTempFile)>,
    /// Regular files with other hard links: the path and the bytes.
    linked: Vec<(PathBuf, Vec<u8>)>,
    /// Devices, FIFOs, sockets: the path and the bytes.
    special: Vec<(PathBuf, Vec<u8>)>,
    /// Folders made for the batch, outermost first.
    created: Vec<PathBuf>,
}

/// A step of the commit, with what undoes it.
enum Done {
    /// `target` now holds the new file; `old` is the file it replaced.
    Renamed { path: PathBuf, target: PathBuf, old: Option<tempfile::NamedTempFile<()>> },
    /// `path` was rewritten in place; `old` is what it held.
    Rewritten { path: PathBuf, old: Vec<u8> },
}

impl Staged {
    fn push(&mut self, sink: Sink) -> Result<(), OutputError> {
        match sink {
            Sink::Stdout(out) => self.stdout.push(out),
            Sink::File { path, target, file, mode } => {
                let cannot = |source| OutputError::File { path: path.clone(), source };
                let tmp = file.into_temp().map_err(cannot)?;
                if let Some(mode) = mode {
                    set_mode(tmp.as_file(), mode).map_err(cannot)?;
                }
                self.files.push((path, target, tmp));
            }
            Sink::InPlace { path, bytes, linked: true, .. } => self.linked.push((path, bytes)),
            Sink::InPlace { path, bytes, linked: false, .. } => self.special.push((path, bytes)),
        }
        Ok(())
    }

    /// Drop every staged file (each deletes itself) and the folders made.
    fn discard(&mut self) {
        self.files.clear();
        self.remove_folders();
    }

    /// Innermost first; a folder something else filled stays.
    fn remove_folders(&mut self) {
        for dir in self.created.drain(..).rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }

    fn commit(mut self) -> Result<(), OutputError> {
        // Stdout first: what reaches it cannot be taken back, so nothing else
        // may have happened when it fails.
        for mut out in std::mem::take(&mut self.stdout) {
            if let Err(e) = out.flush() {
                self.discard();
                return Err(OutputError::Stdout(e));
            }
        }
        let mut done = Vec::new();
        match self.apply(&mut done) {
            Ok(()) => Ok(()), // The kept old files delete themselves.
            Err(error) => {
                let restored = undo(done);
                self.discard();
                match restored {
                    Ok(()) => Err(error),
                    Err((path, kept, source)) => Err(OutputError::Restore { error: Box::new(error), path, kept, source }),
                }
            }
        }
    }

    /// Every step, in order, recording each in `done` as it succeeds.
    fn apply(&mut self, done: &mut Vec<Done>) -> Result<(), OutputError> {
        for (path, target, tmp) in std::mem::take(&mut self.files) {
            let cannot = |source| OutputError::File { path: path.clone(), source };
            let old = keep_old(&target).map_err(cannot)?;
            match tmp.persist(&target) {
                Ok(_) => done.push(Done::Renamed { path, target, old }),
                Err(e) => return Err(cannot(e.error)),
            }
        }
        for (path, bytes) in std::mem::take(&mut self.linked) {
            let cannot = |source| OutputError::File { path: path.clone(), source };
            let old = std::fs::read(&path).map_err(cannot)?;
            let written = write_through(&path, &bytes, true);
            // A failed write may have truncated it: put the old bytes back too.
            done.push(Done::Rewritten { path: path.clone(), old });
            written.map_err(cannot)?;
        }
        for (path, bytes) in std::mem::take(&mut self.special) {
            write_through(&path, &bytes, false).map_err(|source| OutputError::File { path, source })?;
        }
        Ok(())
    }
}

/// Undo `done`, last step first; the first failure is returned (with where
/// the old file still is), the other steps are undone all the same.
fn undo(done: Vec<Done>) -> Result<(), (PathBuf, PathBuf, std::io::Error)> {
    let mut first = Ok(());
    for step in done.into_iter().rev() {
        let failed = match step {
            Done::Renamed { path, target, old: Some(old) } => {
                let old = old.into_temp_path();
                match std::fs::rename(&old, &target) {
                    Ok(()) => None,
                    // Kept, not deleted: it is the only copy of the old file.
                    Err(e) => old.keep().ok().map(|kept| (path, kept, e)),
                }
            }
            Done::Renamed { path, target, old: None } => std::fs::remove_file(&target).err().map(|e| (path, target, e)),
            Done::Rewritten { path, old } => write_through(&path, &old, true).err().map(|e| (path.clone(), path, e)),
        };
        if let (Some(f), Ok(())) = (failed, &first) {
            first = Err(f);
        }
    }
    first
}

/// Where the regular file at `target` is kept while its replacement moves
/// in: a hard link beside it (no bytes copied, and `target` never stops
/// existing), or a copy where the file system has no hard links. `None`
/// where there is no file to keep.
fn keep_old(target: &Path) -> std::io::Result<Option<tempfile::NamedTempFile<()>>> {
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.is_file() => {}
        _ => return Ok(None),
    }
    let builder = {
        let mut b = tempfile::Builder::new();
        b.prefix(".rlx-opt-old-");
        b
    };
    let dir = parent_of(target);
    match builder.make_in(dir, |kept| std::fs::hard_link(target, kept)) {
        Ok(kept) => Ok(Some(kept)),
        Err(_) => {
            let kept = builder.make_in(dir, |kept| {
                let mut to = std::fs::OpenOptions::new().write(true).create_new(true).open(kept)?;
                std::io::copy(&mut std::fs::File::open(target)?, &mut to)?;
                if let Some(mode) = existing_mode(target) {
                    set_mode(&to, mode)?;
                }
                to.sync_all()
            })
            .map_err(without_temp_path)?;
            Ok(Some(kept))
        }
    }
}

/// Write `bytes` through `path` itself (a device, a FIFO, a hard-linked file).
fn write_through(path: &Path, bytes: &[u8], truncate: bool) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).truncate(truncate).open(path)?;
    file.write_all(bytes)?;
    file.flush()
}

/// The folder `path` is in (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// `path` with its symlinks followed (up to 40, as the kernel does), so
/// that the file written is the link's target; a dangling link gives the
/// path it points to, which is created.
fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = std::fs::read_link(&path)?;
                path = match path.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

#[cfg(unix)]
fn hard_links(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn hard_links(_meta: &std::fs::Metadata) -> u64 {
    1
}

#[cfg(unix)]
fn existing_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn existing_mode(_path: &Path) -> Option<u32> {
    None
}

#[cfg(unix)]
fn new_temp_file(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    // The mode goes to open(2), which applies the umask.
    tempfile::Builder::new().prefix(".rlx-opt-").permissions(std::fs::Permissions::from_mode(0o666)).tempfile_in(dir).map_err(without_temp_path)
}

#[cfg(not(unix))]
fn new_temp_file(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(".rlx-opt-").tempfile_in(dir).map_err(without_temp_path)
}

/// tempfile's error without the `at path ".../.rlx-opt-XXXX"` it appends:
/// a message names the destination the user gave ([`OutputError::File`]),
/// and the temporary file's name only confused (an adversarial run).
fn without_temp_path(e: std::io::Error) -> std::io::Error {
    let message = e.to_string();
    match message.find(" at path \"") {
        Some(at) => std::io::Error::new(e.kind(), &message[..at]),
        None => e,
    }
}

#[cfg(unix)]
fn set_mode(file: &std::fs::File, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &std::fs::File, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// Defect 4 of the architecture review: outputs were always 0600, and a
    /// replaced 0644 file became 0600.
    #[test]
    fn new_files_get_the_umask_mode_and_replaced_files_keep_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("fresh.txt");
        write_file(fresh.to_str().unwrap(), b"one").unwrap();
        // What a plain create gives under this process's umask.
        let plain = dir.path().join("plain.txt");
        std::fs::write(&plain, b"x").unwrap();
        assert_eq!(mode(&fresh), mode(&plain));
        assert_ne!(mode(&fresh), 0o600, "0600 is tempfile's default, not a plain write's");

        let kept = dir.path().join("kept.txt");
        std::fs::write(&kept, b"old").unwrap();
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_file(kept.to_str().unwrap(), b"new").unwrap();
        assert_eq!(mode(&kept), 0o640);
        assert_eq!(std::fs::read(&kept).unwrap(), b"new");
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_file(kept.to_str().unwrap(), b"newer").unwrap();
        assert_eq!(mode(&kept), 0o755);
    }

    /// An adversarial run: `-o /nonexistent/x.graph` said `… at path
    /// "/nonexistent/.rlx-opt-wpnxUQ"`, a name the user never gave.
    #[test]
    fn a_failed_output_names_its_destination_not_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("x.graph");
        let e = Sink::open(Some(&path)).err().expect("no folder to write into").to_string();
        assert_eq!(e, format!("cannot write '{}': No such file or directory (os error 2)", path.display()));
    }

    #[test]
    fn a_sink_dropped_before_finish_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let mut sink = Sink::open(path.to_str()).unwrap();
        sink.write_all(b"partial").unwrap();
        drop(sink);
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// Issue 15: `-o /dev/null` as root replaced the device node with a
    /// regular file; a FIFO was replaced (its reader got nothing); a symlink
    /// became a file; a hard link was broken.
    #[test]
    fn special_files_symlinks_and_hard_links_are_written_through() {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let dir = tempfile::tempdir().unwrap();
        // A null device of our own (mknod needs root): a regression must not
        // replace the machine's /dev/null.
        let null = dir.path().join("null");
        if std::process::Command::new("mknod").arg(&null).args(["c", "1", "3"]).status().is_ok_and(|s| s.success()) {
            write_file(null.to_str().unwrap(), b"gone").unwrap();
            assert!(std::fs::metadata(&null).unwrap().file_type().is_char_device());
            std::fs::remove_file(&null).unwrap();
        } else {
            eprintln!("SKIPPED the device-node case: mknod needs root");
        }
        let target = dir.path().join("target.txt");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("target.txt", &link).unwrap();
        write_file(link.to_str().unwrap(), b"through the link").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"through the link");
        // A failure when the file is moved into place names the path as
        // given, not where its link leads.
        let mut sink = Sink::open(link.to_str()).unwrap();
        sink.write_all(b"never placed").unwrap();
        std::fs::remove_file(&target).unwrap();
        std::fs::create_dir(&target).unwrap();
        let message = sink.finish().unwrap_err().to_string();
        assert!(message.starts_with(&format!("cannot write '{}': ", link.display())), "{message}");
        std::fs::remove_dir(&target).unwrap();
        std::fs::write(&target, b"back").unwrap();

        let dangling = dir.path().join("dangling.txt");
        std::os::unix::fs::symlink("created.txt", &dangling).unwrap();
        write_file(dangling.to_str().unwrap(), b"new").unwrap();
        assert_eq!(std::fs::read(dir.path().join("created.txt")).unwrap(), b"new");

        let other = dir.path().join("hard.txt");
        std::fs::hard_link(&target, &other).unwrap();
        write_file(target.to_str().unwrap(), b"both names").unwrap();
        assert_eq!(std::fs::read(&other).unwrap(), b"both names");
        assert_eq!(std::fs::metadata(&target).unwrap().ino(), std::fs::metadata(&other).unwrap().ino());

        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_file(fifo.to_str().unwrap(), b"to the reader").unwrap();
        assert_eq!(reader.join().unwrap(), b"to the reader");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());

        assert!(write_file(dir.path().to_str().unwrap(), b"x").is_err(), "a directory is refused");
        assert!(write_file("", b"x").is_err(), "an empty path is refused");
        // Nothing stray was left beside the files.
        let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["created.txt", "dangling.txt", "fifo", "hard.txt", "link.txt", "target.txt"]);
    }

    #[test]
    fn a_batch_writes_all_files_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("0.npy");
        std::fs::write(&a, b"before").unwrap();
        let mut batch = Batch::default();
        batch.add(&a, b"after".to_vec());
        batch.add(dir.path().join("new/deeper/1.npy"), b"one".to_vec());
        batch.add(dir.path(), b"a directory cannot be written".to_vec());
        assert!(batch.finish().is_err());
        assert_eq!(std::fs::read(&a).unwrap(), b"before", "a failed batch leaves the first file as it was");
        assert!(!dir.path().join("new").exists(), "and removes the folders it made");
        let mut batch = Batch::default();
        batch.add(&a, b"after".to_vec());
        batch.add(dir.path().join("new/1.npy"), b"one".to_vec());
        batch.finish().unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"after");
        assert_eq!(std::fs::read(dir.path().join("new/1.npy")).unwrap(), b"one");
    }
}

#[cfg(all(test, unix))]
mod batch_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    /// Issue 25: a batch's files were renamed one after another, so a
    /// failure midway left the first ones replaced. Here the third rename
    /// fails for real (a folder with a file in it took its place after the
    /// batch was staged): the two files already replaced come back, with
    /// their modes, the new one goes, the folders made go, nothing is left
    /// beside them.
    #[test]
    fn a_rename_failing_midway_puts_back_every_file_already_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.txt"), dir.path().join("new/b.txt"));
        std::fs::write(&a, b"old a").unwrap();
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o640)).unwrap();
        let linked = dir.path().join("linked.txt");
        std::fs::write(&linked, b"old linked").unwrap();
        std::fs::hard_link(&linked, dir.path().join("other-name.txt")).unwrap();
        let c = dir.path().join("c.txt");
        let mut batch = Batch::default();
        batch.add(&a, b"new a".to_vec());
        batch.add(&b, b"new b".to_vec());
        batch.add(&linked, b"new linked".to_vec());
        batch.add(&c, b"new c".to_vec());
        let staged = batch.stage().unwrap();
        std::fs::create_dir(&c).unwrap();
        std::fs::write(c.join("inside"), b"x").unwrap();
        let e = staged.commit().unwrap_err();
        assert!(e.to_string().starts_with(&format!("cannot write '{}'", c.display())), "{e}");
        assert_eq!(std::fs::read(&a).unwrap(), b"old a");
        assert_eq!(std::fs::metadata(&a).unwrap().permissions().mode() & 0o7777, 0o640);
        assert_eq!(std::fs::read(&linked).unwrap(), b"old linked");
        assert!(!dir.path().join("new").exists(), "the new file and its folder are gone");
        assert_eq!(names(dir.path()), ["a.txt", "c.txt", "linked.txt", "other-name.txt"]);

        // Without the obstacle, all of them; the hard link still shares the file.
        std::fs::remove_dir_all(&c).unwrap();
        let mut batch = Batch::default();
        batch.add(&a, b"new a".to_vec());
        batch.add(&linked, b"new linked".to_vec());
        batch.add(&c, b"new c".to_vec());
        batch.finish().unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"new a");
        assert_eq!(std::fs::read(dir.path().join("other-name.txt")).unwrap(), b"new linked");
        assert_eq!(names(dir.path()), ["a.txt", "c.txt", "linked.txt", "other-name.txt"]);
    }

    /// A folder that cannot be made (a file stands where its parent would
    /// be) fails the batch before anything is moved into place, and the
    /// folders made for earlier files go with their staged files (they
    /// stayed, each holding a temporary file: an adversarial run).
    #[test]
    fn a_folder_that_cannot_be_made_leaves_no_folder_made_before_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("h"), b"a file").unwrap();
        let mut batch = Batch::default();
        batch.add(dir.path().join("g/n4/a.wgsl"), b"a".to_vec());
        batch.add(dir.path().join("h/n4/b.wgsl"), b"b".to_vec());
        let e = batch.finish().unwrap_err();
        assert!(e.to_string().contains("h/n4/b.wgsl"), "{e}");
        assert_eq!(names(dir.path()), ["h"]);
    }

    /// A hard-linked file rewritten in place is put back when a later
    /// destination (a device that takes no bytes) fails.
    #[test]
    fn a_file_rewritten_in_place_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let linked = dir.path().join("linked.txt");
        std::fs::write(&linked, b"old").unwrap();
        std::fs::hard_link(&linked, dir.path().join("twin.txt")).unwrap();
        let mut batch = Batch::default();
        batch.add(&linked, b"new".to_vec());
        batch.add("/dev/full", b"no room".to_vec());
        assert!(batch.finish().unwrap_err().to_string().contains("/dev/full"));
        assert_eq!(std::fs::read(dir.path().join("twin.txt")).unwrap(), b"old");
    }
}
