//! RLX text: whatever parses and verifies prints, and the print parses back
//! to the same graph (printed alike). Nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::format::rlx_text;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(graph) = rlx_text::parse(text) else { return };
    if rlx_opt::verify::verify(&graph).is_err() {
        return;
    }
    let printed = rlx_text::print(&graph);
    let again = rlx_text::parse(&printed).unwrap_or_else(|e| panic!("the print does not parse: {e:?}\n{printed}"));
    assert_eq!(rlx_text::print(&again), printed, "parse → print → parse changed the graph");
});
