//! RLX text: whatever parses and verifies prints, and the print parses back
//! to the same graph (printed alike). The size measured before printing
//! (issue 25's output bound) is exactly what prints, and the cheap bound is
//! never below it; a graph past the output limit is one rlx-opt refuses,
//! not printed here. Nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rlx_opt::format::rlx_text;
use rlx_opt::limits::MAX_OUTPUT_BYTES;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(graph) = rlx_text::parse(text) else { return };
    if rlx_opt::verify::verify(&graph).is_err() {
        return;
    }
    let size = rlx_text::printed_len(&graph);
    assert!(rlx_text::printed_len_bound(&graph) >= size, "the cheap bound is below the printed size");
    if size > MAX_OUTPUT_BYTES {
        return;
    }
    let printed = rlx_text::print(&graph);
    assert_eq!(printed.len() as u64, size, "the measured size is not the printed size");
    let again = rlx_text::parse(&printed).unwrap_or_else(|e| panic!("the print does not parse: {e:?}\n{printed}"));
    assert_eq!(rlx_text::print(&again), printed, "parse → print → parse changed the graph");
});
