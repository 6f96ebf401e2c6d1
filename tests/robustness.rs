//! Bad input never panics: every truncation and many single-byte corruptions
//! of the fixtures, in both input formats, end in a graph or a diagnostic.

mod common;

use rlx_opt::driver::round_trip;
use rlx_opt::format::{Emit, InputFormat, json, rlx_text};

fn fixtures() -> Vec<String> {
    let texts: Vec<String> = common::fixture_paths().iter().map(|p| std::fs::read_to_string(p).unwrap()).filter(|t| t.len() < 8_000).collect();
    assert!(texts.len() >= 4);
    texts
}

/// Run the whole front end and a printer; the result does not matter, only that it returns.
fn survive(text: &str, format: InputFormat) -> bool {
    std::panic::catch_unwind(|| {
        let _ = round_trip(text, format, Emit::Graph);
    })
    .is_ok()
}

#[test]
fn every_printer_survives_every_prefix() {
    for text in fixtures() {
        for cut in (0..=text.len()).step_by(11) {
            let prefix = String::from_utf8_lossy(&text.as_bytes()[..cut]);
            for emit in [Emit::Json, Emit::Dot] {
                let _ = round_trip(&prefix, InputFormat::Graph, emit);
            }
        }
    }
}

const NASTY: &[u8] = b"{}[]()%\":,#?-9 \n\\a0";

#[test]
fn truncations_and_corruptions_of_text_never_panic() {
    std::panic::set_hook(Box::new(|_| {}));
    for text in fixtures() {
        let bytes = text.as_bytes();
        for cut in (0..=bytes.len()).step_by(3) {
            let prefix = String::from_utf8_lossy(&bytes[..cut]);
            assert!(survive(&prefix, InputFormat::Graph), "panic on prefix of {cut} bytes:\n{prefix}");
        }
        for i in (0..bytes.len()).step_by(3) {
            for &b in NASTY {
                let mut m = bytes.to_vec();
                m[i] = b;
                let m = String::from_utf8_lossy(&m);
                assert!(survive(&m, InputFormat::Graph), "panic with byte {i} set to {:?}:\n{m}", b as char);
            }
        }
    }
    let _ = std::panic::take_hook();
}

#[test]
fn truncations_and_corruptions_of_json_never_panic() {
    std::panic::set_hook(Box::new(|_| {}));
    for text in fixtures() {
        let doc = json::print(&rlx_text::parse(&text).unwrap());
        let bytes = doc.as_bytes();
        for cut in (0..=bytes.len()).step_by(7) {
            assert!(survive(&String::from_utf8_lossy(&bytes[..cut]), InputFormat::Json), "panic on JSON prefix of {cut} bytes");
        }
        for i in (0..bytes.len()).step_by(5) {
            for &b in NASTY {
                let mut m = bytes.to_vec();
                m[i] = b;
                assert!(survive(&String::from_utf8_lossy(&m), InputFormat::Json), "panic with JSON byte {i} set to {:?}", b as char);
            }
        }
    }
    let _ = std::panic::take_hook();
}

#[test]
fn json_graphs_with_bad_references_are_diagnosed() {
    let bad = r#"{"name":"g","nodes":[{"id":0,"op":{"Activation":"Relu"},"inputs":[7],"shape":{"dims":[{"Static":2}],"dtype":"F32"},"name":null}],"outputs":[0]}"#;
    let e = round_trip(bad, InputFormat::Json, Emit::Graph).unwrap_err();
    assert_eq!(e.message, "node %0: an input refers to undefined node id 7");
    assert_eq!(e.loc, Some(rlx_opt::ir::Loc { line: 1, col: 22 }), "the node's place");
    let cyclic = r#"{"name":"g","nodes":[{"id":0,"op":{"Activation":"Relu"},"inputs":[1],"shape":{"dims":[{"Static":2}],"dtype":"F32"},"name":null},{"id":1,"op":{"Activation":"Relu"},"inputs":[0],"shape":{"dims":[{"Static":2}],"dtype":"F32"},"name":null}],"outputs":[1]}"#;
    assert!(round_trip(cyclic, InputFormat::Json, Emit::Graph).unwrap_err().message.contains("cycle"));
}
