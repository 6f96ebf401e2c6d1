//! What registering the fused ops with RLX shares: registering each name
//! once, and reading RLX's shapes as the static dims the kernels take.

use rlx_ir::{Dim, Shape};
use std::collections::HashSet;
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
