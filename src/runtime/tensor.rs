//! Dense row-major f32 tensors, the values graphs are run on.

use crate::ir::{DType, TensorType};

#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl Tensor {
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Self {
        debug_assert_eq!(shape.iter().product::<usize>(), data.len());
        Tensor { shape, data }
    }

    pub fn zeros(shape: Vec<usize>) -> Self {
        let n = shape.iter().product();
        Tensor { shape, data: vec![0.0; n] }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The static dims of an f32 result type, or why it cannot be run.
    pub fn dims_of(ty: &TensorType) -> Result<Vec<usize>, String> {
        if ty.dtype != DType::F32 {
            return Err(format!("only f32 tensors can be run, not {}", ty.dtype));
        }
        ty.dims
            .iter()
            .map(|d| d.as_static().map(|n| n as usize).ok_or_else(|| format!("dynamic dims cannot be run: {ty}")))
            .collect()
    }

    /// Elements per step along each axis.
    pub fn strides(shape: &[usize]) -> Vec<usize> {
        let mut strides = vec![1; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * shape[i + 1];
        }
        strides
    }

    /// The tensor as `outer × axis × inner` around `axis`.
    pub fn split_at_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
        let outer = shape[..axis].iter().product();
        let inner = shape[axis + 1..].iter().product();
        (outer, shape[axis], inner)
    }
}
