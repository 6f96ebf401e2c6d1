//! The JSON form: what parses prints as JSON, and that parses back to the
//! same graph. Nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::format::{json, rlx_text};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(graph) = json::parse(text) else { return };
    let printed = json::print(&graph);
    let again = json::parse(&printed).unwrap_or_else(|e| panic!("the JSON print does not parse: {e:?}\n{printed}"));
    assert_eq!(rlx_text::print(&again), rlx_text::print(&graph), "JSON → graph → JSON changed the graph");
});
