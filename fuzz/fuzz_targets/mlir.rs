//! MLIR: whatever the reader takes goes graph → MLIR → graph exactly (the
//! RLX text of every graph unchanged). Nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::format::{mlir, rlx_text};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(graphs) = mlir::parse(text, 1) else { return };
    if graphs.is_empty() {
        return;
    }
    let printed = mlir::print(&graphs);
    let again = mlir::parse(&printed, 1).unwrap_or_else(|e| panic!("the MLIR print does not parse: {e:?}\n{printed}"));
    let texts = |gs: &[rlx_opt::ir::Graph]| gs.iter().map(rlx_text::print).collect::<Vec<_>>();
    assert_eq!(texts(&again), texts(&graphs), "graph → MLIR → graph changed a graph");
});
