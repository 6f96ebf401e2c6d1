//! Running graphs on the CPU: tensors, the reference interpreter, and the
//! fused Welch-peaks op's reference and native kernels.

pub mod cuda_kernel;
pub mod interp;
pub mod tensor;
pub mod welch;
pub mod wgpu_kernel;

pub use interp::{FusedOps, run};
pub use tensor::Tensor;

use crate::ir::{Graph, OpKind};
use rand::{RngExt, SeedableRng};
use std::collections::HashMap;

/// Uniform random values in [-1, 1) for every Input and Param of `graph`,
/// the same for the same seed.
pub fn random_inputs(graph: &Graph, seed: u64) -> Result<HashMap<String, Tensor>, String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut inputs = HashMap::new();
    for node in graph.nodes() {
        if let OpKind::Input { name } | OpKind::Param { name } = node.op.kind() {
            let shape = Tensor::dims_of(&node.ty).map_err(|e| format!("input `{name}`: {e}"))?;
            let n = shape.iter().product();
            let data = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            inputs.insert(name.clone(), Tensor::new(shape, data));
        }
    }
    Ok(inputs)
}
