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

/// Where output goes: stdout, or a temporary file beside the destination that
/// is renamed into place only by [`Sink::finish`], so a failed run never
/// leaves a partial file (a dropped temporary file deletes itself).
pub enum Sink {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File { path: String, file: std::io::BufWriter<tempfile::NamedTempFile>, mode: Option<u32> },
}

impl Sink {
    /// Stdout for `None` or `-`, else a temporary file beside `path`.
    pub fn open(path: Option<&str>) -> Result<Sink, OutputError> {
        let Some(path) = path.filter(|p| *p != "-") else {
            return Ok(Sink::Stdout(std::io::BufWriter::with_capacity(1 << 16, std::io::stdout())));
        };
        let dir = match Path::new(path).parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let cannot = |source| OutputError::File { path: path.to_string(), source };
        // A replaced file keeps its mode; a new one gets what a plain
        // `open(O_CREAT, 0666)` would, the umask applied (tempfile's own
        // default is 0600).
        let mode = existing_mode(path);
        let file = new_temp_file(dir).map_err(cannot)?;
        Ok(Sink::File { path: path.to_string(), file: std::io::BufWriter::with_capacity(1 << 20, file), mode })
    }

    /// Push what was written so far to stdout (a no-op for files, which
    /// appear whole at the end).
    pub fn flush_stdout(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File { .. } => Ok(()),
        }
    }

    /// `e`, said of this sink's destination.
    pub fn error(&self, e: std::io::Error) -> OutputError {
        match self {
            Sink::Stdout(_) => OutputError::Stdout(e),
            Sink::File { path, .. } => OutputError::File { path: path.clone(), source: e },
        }
    }

    /// Flush, and move a file into place.
    pub fn finish(self) -> Result<(), OutputError> {
        match self {
            Sink::Stdout(mut out) => match out.flush() {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(OutputError::Stdout(e)),
                _ => Ok(()),
            },
            Sink::File { path, file, mode } => {
                let cannot = |source| OutputError::File { path: path.clone(), source };
                let tmp = file.into_inner().map_err(|e| cannot(e.into_error()))?;
                if let Some(mode) = mode {
                    set_mode(tmp.as_file(), mode).map_err(cannot)?;
                }
                tmp.persist(&path).map_err(|e| cannot(e.error))?;
                Ok(())
            }
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Stdout(out) => out.write(buf),
            Sink::File { file, .. } => file.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File { file, .. } => file.flush(),
        }
    }
}

/// Write a whole file atomically (`-` is stdout).
pub fn write_file(path: &str, bytes: &[u8]) -> Result<(), OutputError> {
    let mut sink = Sink::open(Some(path))?;
    sink.write_all(bytes).map_err(|e| sink.error(e))?;
    sink.finish()
}

#[cfg(unix)]
fn existing_mode(path: &str) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn existing_mode(_path: &str) -> Option<u32> {
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
}
