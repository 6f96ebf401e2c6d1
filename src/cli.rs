//! What the three command lines (`rlx-opt`, `rlx-run`, `rlx-trace`) share:
//! exit codes, clap's usage errors, and flags whose values are library enums
//! (the library itself knows nothing of clap).

use clap::builder::{PossibleValuesParser, TypedValueParser};

/// Exit code for errors in the input or the environment.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code for a malformed command line.
pub const EXIT_USAGE: i32 = 2;

/// Prints clap's message and gives the exit code: `--help` and `--version`
/// end with 0, a malformed command line with [`EXIT_USAGE`]. Help that
/// cannot be written is handled as every stdout write is (a closed pipe:
/// quietly; `> /dev/full`: exit 1).
pub fn usage_error(e: clap::Error) -> i32 {
    let printed = e.print();
    match printed {
        Err(failed) if !e.use_stderr() => StreamError::of("stdout", failed).exit_or(0),
        _ if e.use_stderr() => EXIT_USAGE,
        _ => 0,
    }
}

/// A flag taking one of `all`, spelled by `name` (`--target=cuda`).
pub fn one_of<T: Copy + Send + Sync + 'static>(all: &'static [T], name: fn(T) -> &'static str) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(|t| name(*t)))
        .map(move |s| all.iter().copied().find(|t| name(*t) == s).expect("clap admitted only these names"))
}

/// A write to the tool's own stdout or stderr that failed.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The reader went away (`rlx-trace summary t.json | head -1`).
    #[error("{0} was closed")]
    Closed(&'static str),
    /// Anything else: a full disk (`> /dev/full`), an I/O error.
    #[error("cannot write to {stream}: {source}")]
    Failed { stream: &'static str, source: std::io::Error },
}

impl StreamError {
    fn of(stream: &'static str, e: std::io::Error) -> StreamError {
        if e.kind() == std::io::ErrorKind::BrokenPipe { StreamError::Closed(stream) } else { StreamError::Failed { stream, source: e } }
    }

    /// How the tool ends: a closed pipe quietly, with 0 (what a Unix tool
    /// killed by SIGPIPE amounts to, without the signal's status: Rust
    /// ignores SIGPIPE), outputs not yet written left unwritten; anything
    /// else is said on stderr (where stderr still takes it) and is exit 1.
    pub fn exit(self, tool: &str) -> i32 {
        match self {
            StreamError::Closed(_) => 0,
            failed @ StreamError::Failed { .. } => {
                say_error(tool, &failed.to_string());
                EXIT_FAILURE
            }
        }
    }

    /// [`StreamError::exit`] for clap's help, which names no tool: a closed
    /// pipe gives `ok`.
    fn exit_or(self, ok: i32) -> i32 {
        match self {
            StreamError::Closed(_) => ok,
            failed @ StreamError::Failed { .. } => {
                say(&format!("error: {failed}"));
                EXIT_FAILURE
            }
        }
    }
}

/// Write `text` to stdout (locked, flushed), never panicking as `print!` does.
pub fn print_out(text: &str) -> Result<(), StreamError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| StreamError::of("stdout", e))
}

/// Write `text` to stderr (a report: `--timing`, `--pass-statistics`), never
/// panicking as `eprint!` does.
pub fn print_err(text: &str) -> Result<(), StreamError> {
    write_err(|err| std::io::Write::write_all(err, text.as_bytes()))
}

/// Write to stderr through `write` (a graph streamed, say), with
/// [`print_err`]'s handling of a stderr that takes no more.
pub fn write_err(write: impl FnOnce(&mut std::io::StderrLock<'static>) -> std::io::Result<()>) -> Result<(), StreamError> {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    write(&mut err).and_then(|()| err.flush()).map_err(|e| StreamError::of("stderr", e))
}

/// Say `text` (a whole message, already made printable) on stderr; a
/// stderr that cannot take it is ignored: there is nowhere left to say so,
/// and the exit code still tells.
pub fn say(text: &str) {
    let _ = print_err(&format!("{text}\n"));
}

/// Say `tool: error: message` on stderr, invisible characters escaped and
/// long words clipped ([`crate::diag::printable`]): messages echo input.
pub fn say_error(tool: &str, message: &str) {
    say(&format!("{tool}: error: {}", crate::diag::printable(message)));
}

/// The exit code for an output that failed: a closed stdout ends the tool
/// quietly (as [`StreamError::exit`]); anything else is said, exit 1. The
/// message names a path the user gave, bounded by the OS (`PATH_MAX`): it is
/// escaped but not clipped, so that the file can be found.
pub fn output_failed(tool: &str, e: &crate::output::OutputError) -> i32 {
    if e.is_closed_pipe() {
        0
    } else {
        say(&format!("{tool}: error: {}", crate::diag::escape_invisible(&e.to_string())));
        EXIT_FAILURE
    }
}
