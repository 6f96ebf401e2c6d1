//! RLX's own runtime as a host of the fused op (the `rlx` feature): graphs
//! converted exactly between rlx-ir and rlx-opt's IR ([`convert`]), the
//! fused op's extension and kernels registered through RLX 0.2.19's
//! extension points ([`kernels`]), every fused op fitted to the kernels RLX
//! can launch for it ([`specialize`]), `fuse-welch-peaks` as an RLX IR pass
//! ([`ir_pass`]), and graphs run through RLX's `Session` ([`engine`],
//! `rlx-run --engine=rlx`).
//!
//! RLX users reach this through the `rlx-ext` crate. It lives here, behind a
//! feature, because `rlx-run` (this package) runs it too and Cargo forbids
//! the cycle an `rlx-ext` dependency would make.

pub mod calibrate;
pub mod convert;
pub mod engine;
pub mod ir_pass;
pub mod kernels;
pub mod specialize;

use crate::analysis::Target;

/// What went wrong between rlx-opt and RLX.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("unknown target `{0}` (expected one of cpu, cuda, rocm, metal, mlx, wgpu, tpu)")]
    UnknownTarget(String),
    #[error("{0}")]
    Options(String),
    /// A graph RLX printed that rlx-opt cannot read, or the other way round.
    #[error("converting the graph {direction}: {message}")]
    Convert { direction: &'static str, message: String },
    #[error("fuse-welch-peaks: {0}")]
    Pass(String),
    #[error(transparent)]
    Lower(#[from] crate::lower::LowerError),
    /// RLX refused to compile or run the graph.
    #[error("RLX: {0}")]
    Rlx(String),
    /// RLX panicked compiling or running the graph: a defect of RLX, caught.
    #[error("RLX's {backend} backend failed on this graph (a defect of RLX 0.2.19): it panicked in {stage}{}: {message}", location.as_ref().map(|l| format!(" at {l}")).unwrap_or_default())]
    RlxPanicked { backend: &'static str, stage: &'static str, message: String, location: Option<String> },
}

/// A target by the name `--target` takes.
pub fn target_named(name: &str) -> Result<Target, HostError> {
    Target::from_name(name).ok_or_else(|| HostError::UnknownTarget(name.to_string()))
}
