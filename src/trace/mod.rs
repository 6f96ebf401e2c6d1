//! rlx-trace: compare two kernel traces and say which operations one side
//! runs as several kernels and the other as one, with the time it saves.
//!
//! [`load`] reads a trace, [`classify`] puts each kernel in a category,
//! `findings` compares two traces ([`diff`], [`summary`]) and `render` prints
//! the result as text; what can fail is a [`TraceError`].

pub mod classify;
pub mod error;
pub mod load;

mod findings;
mod render;

pub use error::TraceError;
pub use findings::{CategoryRow, Finding, Report, Side, diff, summary};
pub use render::{render_diff, render_summary};
