//! MLIR: whatever the reader takes goes graph → MLIR → graph exactly (the
//! RLX text of every graph unchanged). Graphs past the output limit (issue
//! 25: a few bytes of splat are gigabytes of text) are what rlx-opt
//! refuses, not printed; the sizes it measures are exact. Nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::format::{Emit, mlir, rlx_text};
use rlx_opt::limits::MAX_OUTPUT_BYTES;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(graphs) = mlir::parse(text, 1) else { return };
    if graphs.is_empty() {
        return;
    }
    let fits = |emit: Emit| graphs.iter().all(|g| emit.check_size(g, MAX_OUTPUT_BYTES).is_ok());
    if !fits(Emit::Mlir) || !fits(Emit::Graph) {
        return;
    }
    let printed = mlir::print(&graphs);
    let again = mlir::parse(&printed, 1).unwrap_or_else(|e| panic!("the MLIR print does not parse: {e:?}\n{printed}"));
    let texts = |gs: &[rlx_opt::ir::Graph]| gs.iter().map(rlx_text::print).collect::<Vec<_>>();
    for (g, t) in graphs.iter().zip(texts(&graphs)) {
        assert_eq!(rlx_text::printed_len(g), t.len() as u64, "the measured size is not the printed size");
    }
    assert_eq!(texts(&again), texts(&graphs), "graph → MLIR → graph changed a graph");
});
