//! The pass registry: every pass rlx-opt knows, in one place. Each pass is
//! one file beside this one.

pub mod dce;
pub mod fuse_log_mel;
pub mod fuse_welch_peaks;
pub mod fusion;
mod print_io_profile;

use crate::pass::PassInfo;

pub use dce::Dce;
pub use print_io_profile::PrintIoProfile;

/// All registered passes, in `--list-passes` order.
pub fn registry() -> &'static [PassInfo] {
    &[dce::INFO, fuse_log_mel::INFO, fuse_welch_peaks::INFO, print_io_profile::INFO]
}

pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    registry().iter().find(|p| p.name == name)
}
