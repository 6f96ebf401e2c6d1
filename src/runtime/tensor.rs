//! Dense row-major f32 tensors, the values graphs are run on.

use crate::limits::{self, MAX_TENSOR_BYTES};
use crate::ir::{DType, TensorType};

/// Why a value of some type cannot be run (the interpreter's and the
/// kernels' tensors are static, f32 or c64, at most [`MAX_TENSOR_BYTES`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UnrunnableType {
    #[error("{ty} takes {} ({bytes} bytes); the limit for one tensor is {}", limits::bytes(*bytes), limits::bytes(MAX_TENSOR_BYTES))]
    TooLarge { ty: TensorType, bytes: u64 },
    #[error("{ty} has more elements than 64 bits count; the limit for one tensor is {}", limits::bytes(MAX_TENSOR_BYTES))]
    Uncountable { ty: TensorType },
    #[error("dynamic dims cannot be run: {ty}")]
    Dynamic { ty: TensorType },
    #[error("only f32 and c64 tensors can be run, not {0}")]
    DType(DType),
}

/// A borrowed tensor: the kernels read operands they do not own (RLX's
/// arena views, rlx-run's tensors) without copying them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorRef<'a> {
    pub shape: &'a [usize],
    pub data: &'a [f32],
}

impl TensorRef<'_> {
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

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

    pub fn view(&self) -> TensorRef<'_> {
        TensorRef { shape: &self.shape, data: &self.data }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The static dims a value of this type is stored with, or why it cannot
    /// be run: f32 as is, c64 as f32 pairs (a trailing axis of 2); at most
    /// [`MAX_TENSOR_BYTES`], checked before anything is allocated.
    pub fn dims_of(ty: &TensorType) -> Result<Vec<usize>, UnrunnableType> {
        match ty.byte_size() {
            Some(bytes) if bytes <= MAX_TENSOR_BYTES => {}
            Some(bytes) => return Err(UnrunnableType::TooLarge { ty: ty.clone(), bytes }),
            None if ty.num_elements().is_none() && ty.dims.iter().all(|d| d.as_static().is_some()) => {
                return Err(UnrunnableType::Uncountable { ty: ty.clone() });
            }
            None => {}
        }
        let mut dims: Vec<usize> = ty
            .dims
            .iter()
            .map(|d| d.as_static().map(|n| n as usize).ok_or_else(|| UnrunnableType::Dynamic { ty: ty.clone() }))
            .collect::<Result<_, _>>()?;
        match ty.dtype {
            DType::F32 => {}
            DType::C64 => dims.push(2),
            other => return Err(UnrunnableType::DType(other)),
        }
        Ok(dims)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Dim;

    #[test]
    fn types_that_cannot_be_run_say_why() {
        assert_eq!(Tensor::dims_of(&TensorType::new(&[2, 3], DType::C64)).unwrap(), [2, 3, 2]);
        let huge = TensorType::new(&[100_000, 100_000], DType::F32);
        assert!(matches!(Tensor::dims_of(&huge), Err(UnrunnableType::TooLarge { bytes: 40_000_000_000, .. })));
        assert!(Tensor::dims_of(&huge).unwrap_err().to_string().ends_with("the limit for one tensor is 4.0 GiB"));
        let uncountable = TensorType::new(&[u64::MAX, 4], DType::F32);
        assert!(matches!(Tensor::dims_of(&uncountable), Err(UnrunnableType::Uncountable { .. })));
        let mut dynamic = TensorType::new(&[4], DType::F32);
        dynamic.dims[0] = Dim::Dynamic(0);
        assert!(matches!(Tensor::dims_of(&dynamic), Err(UnrunnableType::Dynamic { .. })));
        assert_eq!(Tensor::dims_of(&TensorType::new(&[4], DType::I64)), Err(UnrunnableType::DType(DType::I64)));
    }
}
