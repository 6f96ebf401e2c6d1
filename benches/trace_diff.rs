//! `rlx-trace diff` on two ~200 MB traces, made by repeating the events of
//! the real Qwen H100 / MI300X traces (shifted in time), through the real
//! binary with its peak RSS. Then two traces that share nothing (every
//! kernel of one side an FFT, of the other a Welch-peaks op, one stream
//! each) of 10^5 and 10^6 kernels: a diff of them once took 57–76 s and
//! over 120 s, quadratic in the kernels; now the streams are listed as not
//! aligned after a bounded search. `cargo bench --bench trace_diff [-- MB]`.

#[path = "common/measure.rs"]
mod measure;

use std::io::Write;
use std::process::Command;

fn main() {
    let target_mb: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200);
    let dir = std::env::temp_dir().join(format!("rlx-trace-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/traces");
    let mut files = Vec::new();
    for side in ["h100", "mi300"] {
        let path = format!("{data}/{side}_Qwen_Qwen1.5-0.5B-Chat.json.gz");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()), &mut text).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let events = doc["traceEvents"].as_array().unwrap();
        let span = events.iter().filter_map(|e| e["ts"].as_f64()).fold(0f64, f64::max) + 1.0;
        let out = dir.join(format!("{side}.json"));
        let mut w = std::io::BufWriter::new(std::fs::File::create(&out).unwrap());
        write!(w, "{{\"deviceProperties\":{},\"traceEvents\":[", doc["deviceProperties"]).unwrap();
        let (mut written, mut first, mut copy) = (0usize, true, 0u32);
        while written < target_mb << 20 {
            for e in events {
                let mut e = e.clone();
                if let Some(ts) = e["ts"].as_f64() {
                    e["ts"] = (ts + copy as f64 * span).into();
                }
                if let Some(ext) = e["args"]["External id"].as_i64() {
                    e["args"]["External id"] = (ext + copy as i64 * 1_000_000).into();
                }
                let s = e.to_string();
                written += s.len() + 1;
                if !first {
                    w.write_all(b",").unwrap();
                }
                first = false;
                w.write_all(s.as_bytes()).unwrap();
            }
            copy += 1;
        }
        w.write_all(b"]}").unwrap();
        w.flush().unwrap();
        files.push(out);
    }
    let size: u64 = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).sum();
    let mut command = Command::new(env!("CARGO_BIN_EXE_rlx-trace"));
    command.args(["diff", files[0].to_str().unwrap(), files[1].to_str().unwrap(), "--format=json", "-o", dir.join("report.json").to_str().unwrap()]);
    let m = measure::run(command);
    let (secs, peak_kb) = (m.secs, m.peak_kb);
    assert!(m.stderr.is_empty(), "{}", m.stderr);
    println!("rlx-trace diff: two traces of {:.0} MB in all: {secs:.2} s, peak RSS {:.0} MB", size as f64 / 1e6, peak_kb as f64 / 1024.0);
    for kernels in [100_000, 1_000_000] {
        unshared(&dir, kernels);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two one-stream traces of `kernels` kernels with no category in common.
fn unshared(dir: &std::path::Path, kernels: usize) {
    let mut files = Vec::new();
    for (side, name) in [("a", "Fft:rfft"), ("b", "WelchPeaks:peaks")] {
        let path = dir.join(format!("unshared_{side}.json"));
        let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        write!(w, "{{\"traceEvents\":[").unwrap();
        for i in 0..kernels {
            let comma = if i == 0 { "" } else { "," };
            write!(w, "{comma}{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"{name}\",\"ts\":{i},\"dur\":1,\"args\":{{\"stream\":7}}}}").unwrap();
        }
        write!(w, "]}}").unwrap();
        w.flush().unwrap();
        files.push(path);
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_rlx-trace"));
    command.args(["diff", files[0].to_str().unwrap(), files[1].to_str().unwrap(), "--format=json", "-o", dir.join("unshared.json").to_str().unwrap()]);
    let m = measure::run(command);
    let report = std::fs::read_to_string(dir.join("unshared.json")).unwrap();
    assert!(report.contains("unaligned_streams"), "the streams that share nothing were aligned");
    println!("rlx-trace diff: two traces of {kernels} kernels sharing nothing: {:.2} s, peak RSS {:.0} MB", m.secs, m.peak_kb as f64 / 1024.0);
}
