//! What can go wrong when a graph runs.

use crate::analysis::plan::Unsupported;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("input `{name}`: {message}")]
    Input { name: String, message: String },
    #[error("no value given for input `{0}`")]
    MissingInput(String),
    #[error("`{op}` op %{label}: {message}")]
    Op { op: String, label: u32, message: String },
    #[error("%{label}: computed shape {computed:?} but the graph declares {declared:?}")]
    Shape { label: u32, computed: Vec<usize>, declared: Vec<usize> },
    #[error("%{label}: {message}")]
    Type { label: u32, message: String },
    /// The fused op's operands disagree with its attributes.
    #[error("{0}")]
    Operands(String),
    /// The kernel set has no kernel for this fused op.
    #[error("{kernel} has no kernel for `{op}`")]
    NoKernel { op: &'static str, kernel: String },
    /// No kernel of this device takes the op.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    #[error(transparent)]
    Lower(#[from] crate::lower::LowerError),
    /// A device or driver failed (`backend`: wgpu, cuda; the command line
    /// says which flag chose it).
    #[error("{message}")]
    Device { backend: &'static str, message: String },
    /// A buffer about to be bound is not the length the plan fixed: refused
    /// before any launch (CUDA has no robust buffer access).
    #[error("{backend}: the {what} buffer holds {len} values, the kernel plan binds {planned}")]
    Buffer { backend: &'static str, what: &'static str, len: u64, planned: u64 },
}

impl RuntimeError {
    /// `Ok` when a buffer about to be bound has the length the plan fixed.
    pub fn check_buffer(backend: &'static str, what: &'static str, len: usize, planned: u64) -> Result<(), RuntimeError> {
        if len as u64 == planned { Ok(()) } else { Err(RuntimeError::Buffer { backend, what, len: len as u64, planned }) }
    }
}
