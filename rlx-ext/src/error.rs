//! What went wrong between rlx-opt and RLX, inside rlx-ext: the public
//! [`crate::Error`] wraps it.

use rlx_opt::analysis::Target;

/// What went wrong between rlx-opt and RLX.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExtError {
    #[error("unknown target `{0}` (expected one of cpu, cuda, rocm, metal, mlx, wgpu, tpu)")]
    UnknownTarget(String),
    #[error("{0}")]
    Options(String),
    /// A graph RLX printed that rlx-opt cannot read, or the other way round.
    #[error("converting the graph {direction}: {message}")]
    Convert { direction: &'static str, message: String },
    #[error("{pass}: {message}")]
    Pass { pass: &'static str, message: String },
    #[error(transparent)]
    Lower(#[from] rlx_opt::lower::LowerError),
    /// RLX refused to compile or run the graph.
    #[error("RLX: {0}")]
    Rlx(String),
    /// RLX panicked compiling or running the graph: a defect of RLX, caught.
    #[error("RLX's {backend} backend failed on this graph (a defect of RLX 0.2.19): it panicked in {stage}{}: {message}", location.as_ref().map(|l| format!(" at {l}")).unwrap_or_default())]
    RlxPanicked { backend: &'static str, stage: &'static str, message: String, location: Option<String> },
}

/// A target by the name `--target` takes.
pub(crate) fn target_named(name: &str) -> Result<Target, ExtError> {
    Target::from_name(name).ok_or_else(|| ExtError::UnknownTarget(name.to_string()))
}
