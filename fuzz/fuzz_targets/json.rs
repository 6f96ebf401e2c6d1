//! The JSON form: what parses prints as JSON, and that parses back to the
//! same graph. The cheap size bound (issue 25's output limit) is never below
//! the printed size; a graph past the limit is refused, not printed. Nothing
//! panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::format::{Emit, json, rlx_text};
use rlx_opt::limits::MAX_OUTPUT_BYTES;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(graph) = json::parse(text) else { return };
    if Emit::Json.check_size(&graph, MAX_OUTPUT_BYTES).is_err() || Emit::Graph.check_size(&graph, MAX_OUTPUT_BYTES).is_err() {
        return;
    }
    let printed = json::print(&graph);
    assert!(json::printed_len_bound(&graph) >= printed.len() as u64, "the cheap bound is below the printed size");
    let again = json::parse(&printed).unwrap_or_else(|e| panic!("the JSON print does not parse: {e:?}\n{printed}"));
    assert_eq!(rlx_text::print(&again), rlx_text::print(&graph), "JSON → graph → JSON changed the graph");
});
