//! What registering the fused ops with RLX shares: registering each name
//! once, reading RLX's shapes as the static dims the kernels take, and the
//! op extension (shape inference, verification) both fused ops register.

use rlx_ir::op_registry::OpExtension;
use rlx_ir::{DType, Dim, Shape};
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock};

/// Names already registered: RLX warns on every re-registration, and
/// installing twice must be quiet and cheap.
fn registered() -> &'static Mutex<HashSet<String>> {
    static NAMES: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    NAMES.get_or_init(Default::default)
}

/// Run `register` once per `name` for the life of the process.
pub(crate) fn once_per_name(name: &str, register: impl FnOnce()) {
    let mut names = registered().lock().unwrap_or_else(|p| p.into_inner());
    if names.insert(name.to_string()) {
        register();
    }
}

/// The static dims of an RLX shape, or why the fused ops cannot run on it.
pub(crate) fn static_dims(shape: &Shape) -> Result<Vec<usize>, String> {
    shape
        .dims()
        .iter()
        .map(|d| match d {
            Dim::Static(n) => Ok(*n),
            Dim::Dynamic(_) => Err(format!("the operand has dynamic dims ({shape:?}): the fused op runs on static shapes")),
        })
        .collect()
}

/// What RLX's op registry needs of a fused op: its result's shape from its
/// attributes (JSON bytes) and operand 0, and the operands its attributes
/// take. Each fused op has one ([`FusedOpExtension`] registers it).
pub(crate) trait FusedOpSignature: 'static {
    /// What operand 0 is, for an error: "the segments", "the frames".
    const OPERAND_0: &'static str;
    /// The operands every op of the kind takes (a window adds one, which
    /// graphs carry in the op's count).
    const MIN_INPUTS: usize;
    fn result_shape(attrs: &[u8], input: &Shape) -> Result<Shape, String>;
    /// The operands the attributes take; `None` where they do not parse
    /// (then [`Self::result_shape`] says why).
    fn operands(attrs: &[u8]) -> Option<usize>;
}

/// A fused op's extension under `name`, from its [`FusedOpSignature`].
pub(crate) struct FusedOpExtension<S> {
    name: String,
    signature: PhantomData<fn() -> S>,
}

impl<S> FusedOpExtension<S> {
    pub(crate) fn new(name: &str) -> Self {
        FusedOpExtension { name: name.to_string(), signature: PhantomData }
    }
}

impl<S: FusedOpSignature> OpExtension for FusedOpExtension<S> {
    fn name(&self) -> &str {
        &self.name
    }

    fn num_inputs(&self) -> usize {
        S::MIN_INPUTS
    }

    /// A shape that cannot be inferred is reported by [`Self::verify`];
    /// this hook has no error path, so it answers the operand's shape.
    fn infer_shape(&self, inputs: &[&Shape], attrs: &[u8]) -> Shape {
        match inputs.first() {
            Some(input) => S::result_shape(attrs, input).unwrap_or_else(|_| (*input).clone()),
            None => Shape::new(&[0], DType::F32),
        }
    }

    fn verify(&self, node: &rlx_ir::Node, inputs: &[&Shape]) -> Vec<String> {
        let name = &self.name;
        let rlx_ir::Op::Custom { attrs, .. } = &node.op else { return vec![format!("{name} is not a custom op")] };
        let Some(input) = inputs.first() else { return vec![format!("{name} takes {} as operand 0", S::OPERAND_0)] };
        let mut errors = Vec::new();
        match S::result_shape(attrs, input) {
            Ok(shape) if shape.dims() != node.shape.dims() => errors.push(format!("{name}: result shape {:?}, the op computes {:?}", node.shape, shape)),
            Ok(_) => {}
            Err(e) => errors.push(format!("{name}: {e}")),
        }
        if let Some(want) = S::operands(attrs)
            && inputs.len() != want
        {
            let plural = if inputs.len() == 1 { "" } else { "s" };
            errors.push(format!("{name}: {} operand{plural}, the attributes need {want}", inputs.len()));
        }
        errors
    }
}
