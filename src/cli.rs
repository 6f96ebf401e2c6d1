//! What the three command lines (`rlx-opt`, `rlx-run`, `rlx-trace`) share:
//! exit codes, clap's usage errors, and flags whose values are library enums
//! (the library itself knows nothing of clap).

use clap::builder::{PossibleValuesParser, TypedValueParser};

/// Exit code for errors in the input or the environment.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code for a malformed command line.
pub const EXIT_USAGE: i32 = 2;

/// Prints clap's message and gives the exit code: `--help` and `--version`
/// end with 0, a malformed command line with [`EXIT_USAGE`].
pub fn usage_error(e: clap::Error) -> i32 {
    let _ = e.print();
    if e.use_stderr() { EXIT_USAGE } else { 0 }
}

/// A flag taking one of `all`, spelled by `name` (`--target=cuda`).
pub fn one_of<T: Copy + Send + Sync + 'static>(all: &'static [T], name: fn(T) -> &'static str) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(|t| name(*t)))
        .map(move |s| all.iter().copied().find(|t| name(*t) == s).expect("clap admitted only these names"))
}
