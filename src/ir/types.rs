//! Element types and tensor shapes, spelled as RLX spells them.

use smallvec::SmallVec;
use std::fmt;

/// Scalar element type; the names are RLX's `DType` display names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    BF16,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U32,
    Bool,
    C64,
    C128,
}

impl DType {
    pub const ALL: [DType; 13] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U32,
        DType::Bool,
        DType::C64,
        DType::C128,
    ];

    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The textual name (`f32`, `bf16`, …).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U32 => "u32",
            DType::Bool => "bool",
            DType::C64 => "c64",
            DType::C128 => "c128",
        }
    }

    /// The name of the variant in RLX's serde form (`F32`, `BF16`, …).
    pub fn serde_name(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::F64 => "F64",
            DType::I8 => "I8",
            DType::I16 => "I16",
            DType::I32 => "I32",
            DType::I64 => "I64",
            DType::U8 => "U8",
            DType::U32 => "U32",
            DType::Bool => "Bool",
            DType::C64 => "C64",
            DType::C128 => "C128",
        }
    }

    pub fn from_serde_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.serde_name() == name)
    }

    pub fn size_bytes(self) -> u64 {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::F16 | DType::BF16 | DType::I16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One dimension: a known extent or a dynamic symbol (`?3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dim {
    Static(u64),
    Dynamic(u32),
}

impl Dim {
    pub fn as_static(self) -> Option<u64> {
        match self {
            Dim::Static(n) => Some(n),
            Dim::Dynamic(_) => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Static(n) => write!(f, "{n}"),
            Dim::Dynamic(s) => write!(f, "?{s}"),
        }
    }
}

/// The result type of a node: dims and element type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub dims: SmallVec<[Dim; 4]>,
    pub dtype: DType,
}

impl TensorType {
    pub fn new(dims: &[u64], dtype: DType) -> Self {
        TensorType {
            dims: dims.iter().map(|&d| Dim::Static(d)).collect(),
            dtype,
        }
    }

    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// All dims, when every one is static.
    pub fn static_dims(&self) -> Option<SmallVec<[u64; 4]>> {
        self.dims.iter().map(|d| d.as_static()).collect()
    }

    /// Element count, `None` when a dim is dynamic or the product overflows.
    pub fn num_elements(&self) -> Option<u64> {
        self.dims
            .iter()
            .try_fold(1u64, |acc, d| acc.checked_mul(d.as_static()?))
    }

    /// Byte size, `None` when a dim is dynamic or the size overflows u64.
    pub fn byte_size(&self) -> Option<u64> {
        self.num_elements()?.checked_mul(self.dtype.size_bytes())
    }

    /// True when the static dims' byte size does not fit in u64 (dynamic dims count as 1).
    pub fn byte_size_overflows(&self) -> bool {
        self.dims
            .iter()
            .try_fold(self.dtype.size_bytes(), |acc, d| {
                acc.checked_mul(d.as_static().unwrap_or(1))
            })
            .is_none()
    }

    /// The last dim, if the tensor has rank ≥ 1.
    pub fn last(&self) -> Option<Dim> {
        self.dims.last().copied()
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "] {}", self.dtype)
    }
}
