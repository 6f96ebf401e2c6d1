//! Writing output files atomically: every tool's `-o`, reports, kernels and
//! `.npy` outputs go through here, so a failed run never leaves a partial
//! file and a replaced file keeps its mode.
//!
//! A utility below every layer: it knows files, not graphs.

use std::io::Write;
use std::path::Path;

/// Why an output could not be written, naming where.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot write '{path}': {source}")]
    File { path: String, source: std::io::Error },
    #[error("cannot write to stdout: {0}")]
    Stdout(std::io::Error),
}

/// Where output goes:
/// - stdout, for no path, `-` or `/dev/stdout`;
/// - a regular file (new, or reached through symlinks): a temporary file
///   beside it, renamed into place only by [`Sink::finish`], so a failed run
///   never leaves a partial file (a dropped temporary file deletes itself)
///   and a symlink on the way stays a symlink;
/// - anything else (a device such as `/dev/null`, a FIFO, a socket), or a
///   regular file with other hard links: held in memory and written through
///   the path at [`Sink::finish`]: a device node or FIFO is never replaced,
///   and every link keeps seeing the file.
pub enum Sink {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    /// `path` as given (what messages name); `target`, the file it reaches.
    File { path: String, target: std::path::PathBuf, file: std::io::BufWriter<tempfile::NamedTempFile>, mode: Option<u32> },
    Through { path: String, bytes: Vec<u8>, truncate: bool },
}

impl Sink {
    /// A sink for `path` (`None`, `-` and `/dev/stdout` are stdout).
    pub fn open(path: Option<&str>) -> Result<Sink, OutputError> {
        let Some(path) = path.filter(|p| !matches!(*p, "-" | "/dev/stdout")) else {
            return Ok(Sink::Stdout(std::io::BufWriter::with_capacity(1 << 16, std::io::stdout())));
        };
        let cannot = |source| OutputError::File { path: path.to_string(), source };
        if path.is_empty() {
            return Err(cannot(std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path is empty")));
        }
        let target = resolve_links(Path::new(path)).map_err(cannot)?;
        match std::fs::metadata(&target) {
            Ok(meta) if meta.is_dir() => Err(cannot(std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory"))),
            Ok(meta) if !meta.is_file() => Ok(Sink::Through { path: path.to_string(), bytes: Vec::new(), truncate: false }),
            Ok(meta) if hard_links(&meta) > 1 => Ok(Sink::Through { path: path.to_string(), bytes: Vec::new(), truncate: true }),
            _ => {
                let dir = match target.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                // A replaced file keeps its mode; a new one gets what a plain
                // `open(O_CREAT, 0666)` would, the umask applied (tempfile's own
                // default is 0600).
                let mode = existing_mode(&target);
                let file = new_temp_file(dir).map_err(cannot)?;
                let file = std::io::BufWriter::with_capacity(1 << 20, file);
                Ok(Sink::File { path: path.to_string(), target, file, mode })
            }
        }
    }

    /// Push what was written so far to stdout (a no-op for files, which
    /// appear whole at the end).
    pub fn flush_stdout(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File { .. } | Sink::Through { .. } => Ok(()),
        }
    }

    /// `e`, said of this sink's destination.
    pub fn error(&self, e: std::io::Error) -> OutputError {
        match self {
            Sink::Stdout(_) => OutputError::Stdout(e),
            Sink::File { path, .. } | Sink::Through { path, .. } => OutputError::File { path: path.clone(), source: e },
        }
    }

    /// Flush, and move a file into place (or write it through its path).
    pub fn finish(self) -> Result<(), OutputError> {
        match self {
            Sink::Stdout(mut out) => match out.flush() {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(OutputError::Stdout(e)),
                _ => Ok(()),
            },
            Sink::File { path, target, file, mode } => {
                let cannot = |source| OutputError::File { path: path.clone(), source };
                let tmp = file.into_inner().map_err(|e| cannot(e.into_error()))?;
                if let Some(mode) = mode {
                    set_mode(tmp.as_file(), mode).map_err(cannot)?;
                }
                tmp.persist(&target).map_err(|e| cannot(e.error))?;
                Ok(())
            }
            Sink::Through { path, bytes, truncate } => {
                let cannot = |source| OutputError::File { path: path.clone(), source };
                let mut file = std::fs::OpenOptions::new().write(true).truncate(truncate).open(&path).map_err(cannot)?;
                file.write_all(&bytes).map_err(cannot)?;
                file.flush().map_err(cannot)
            }
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Stdout(out) => out.write(buf),
            Sink::File { file, .. } => file.write(buf),
            Sink::Through { bytes, .. } => bytes.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File { file, .. } => file.flush(),
            Sink::Through { .. } => Ok(()),
        }
    }
}

/// Write a whole file atomically (`-` is stdout).
pub fn write_file(path: &str, bytes: &[u8]) -> Result<(), OutputError> {
    let mut sink = Sink::open(Some(path))?;
    sink.write_all(bytes).map_err(|e| sink.error(e))?;
    sink.finish()
}

/// Several files that appear together or not at all: [`Batch::add`] only
/// records them; [`Batch::finish`] creates their folders, writes every one
/// beside its destination, and only when all are written moves them into
/// place. A failure before that leaves every destination as it was and
/// removes the folders it created.
#[derive(Default)]
pub struct Batch {
    files: Vec<(std::path::PathBuf, Vec<u8>)>,
}

impl Batch {
    /// Record `bytes` for `path` (nothing is written yet).
    pub fn add(&mut self, path: impl Into<std::path::PathBuf>, bytes: Vec<u8>) {
        self.files.push((path.into(), bytes));
    }

    /// Write every file and move them into place.
    pub fn finish(self) -> Result<(), OutputError> {
        let mut created: Vec<std::path::PathBuf> = Vec::new();
        let written = self.write_all(&mut created);
        match written {
            Ok(sinks) => sinks.into_iter().try_for_each(Sink::finish),
            Err(e) => {
                // Innermost first; a folder something else filled stays.
                for dir in created.iter().rev() {
                    let _ = std::fs::remove_dir(dir);
                }
                Err(e)
            }
        }
    }

    fn write_all(&self, created: &mut Vec<std::path::PathBuf>) -> Result<Vec<Sink>, OutputError> {
        let mut sinks = Vec::with_capacity(self.files.len());
        for (path, bytes) in &self.files {
            let shown = path.to_string_lossy();
            let cannot = |source| OutputError::File { path: shown.to_string(), source };
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let missing: Vec<_> = dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).map(Path::to_path_buf).collect();
                std::fs::create_dir_all(dir).map_err(cannot)?;
                created.extend(missing.into_iter().rev());
            }
            let mut sink = Sink::open(Some(&shown))?;
            sink.write_all(bytes).map_err(|e| sink.error(e))?;
            sink.flush().map_err(|e| sink.error(e))?;
            sinks.push(sink);
        }
        Ok(sinks)
    }
}

/// `path` with its symlinks followed (up to 40, as the kernel does), so
/// that the file written is the link's target; a dangling link gives the
/// path it points to, which is created.
fn resolve_links(path: &Path) -> std::io::Result<std::path::PathBuf> {
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
    tempfile::Builder::new().prefix(".rlx-opt-").permissions(std::fs::Permissions::from_mode(0o666)).tempfile_in(dir)
}

#[cfg(not(unix))]
fn new_temp_file(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(".rlx-opt-").tempfile_in(dir)
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
