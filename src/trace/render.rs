//! The text reports of `rlx-trace summary` and `rlx-trace diff`: fixed-width
//! tables meant for a terminal; the JSON form is the types' serialisation.

use super::findings::{CategoryRow, Finding, Report, Side};
use std::fmt::Write as _;

/// One trace's header line and category table.
pub fn render_summary(s: &Side, rows: &[CategoryRow]) -> String {
    let mut out = format!(
        "{} — {:?} {}: {} kernels, {:.1} µs, {} B device→host\n\n{:<40} {:>8} {:>14} {:>7}\n",
        line(&s.label),
        s.platform,
        line(s.device.as_deref().unwrap_or("")),
        s.kernels,
        s.kernel_time_us,
        s.device_to_host_bytes,
        "category",
        "count",
        "time_us",
        "share"
    );
    for r in rows {
        let _ = writeln!(out, "{:<40} {:>8} {:>14.1} {:>6.1}%", line(&r.category), r.count[0], r.time_us[0], 100.0 * r.share[0]);
    }
    out
}

/// Both traces' headers, their categories side by side, and the findings
/// by time saved.
pub fn render_diff(r: &Report) -> String {
    let [a, b] = &r.sides;
    let mut out = String::new();
    for s in [a, b] {
        let _ = writeln!(out, "{}: {:?} {} — {} kernels, {:.1} µs, {} B device→host", line(&s.label), s.platform, line(s.device.as_deref().unwrap_or("")), s.kernels, s.kernel_time_us, s.device_to_host_bytes);
    }
    let _ = writeln!(out, "\n{:<40} {:>8} {:>12} {:>7}   {:>8} {:>12} {:>7}", "category", clip(&a.label, 8), "µs", "share", clip(&b.label, 8), "µs", "share");
    for c in &r.categories {
        let _ = writeln!(
            out,
            "{:<40} {:>8} {:>12.1} {:>6.1}%   {:>8} {:>12.1} {:>6.1}%",
            clip(&c.category, 40),
            c.count[0],
            c.time_us[0],
            100.0 * c.share[0],
            c.count[1],
            c.time_us[1],
            100.0 * c.share[1]
        );
    }
    let mut by_saving: Vec<&Finding> = r.findings.iter().collect();
    by_saving.sort_by(|x, y| y.time_saved_us.total_cmp(&x.time_saved_us));
    let _ = writeln!(out, "\nfusion findings ({}), by time saved:", by_saving.len());
    for f in by_saving {
        let _ = writeln!(
            out,
            "  [{}] {} fuses {} ← {} ({}×, {:.1} µs vs {:.1} µs, saves {:.1} µs, confidence {:.1})\n      {}",
            f.kind,
            line(&f.fused_by),
            line(&f.fused),
            if f.unfused.is_empty() { "?".to_string() } else { line(&f.unfused.join(" → ")) },
            f.occurrences,
            f.fused_time_us,
            f.unfused_time_us,
            f.time_saved_us,
            f.confidence,
            line(&f.evidence)
        );
    }
    for u in &r.unaligned_streams {
        let _ = writeln!(
            out,
            "  (stream pair {} not aligned: {} and {} kernels differ by more than {} kernels, so no sequence findings there)",
            u.rank, u.kernels[0], u.kernels[1], super::findings::MAX_ALIGNMENT_EDITS
        );
    }
    out
}

/// At most `width` characters of `text`, its line breaks escaped first
/// ([`line`]), so that a long name keeps the table's columns.
fn clip(text: &str, width: usize) -> String {
    line(text).chars().take(width).collect()
}

/// A field from the input (a label, a kernel's or device's name) in one
/// line of a report: its line breaks escaped, so that it cannot break the
/// table (`--labels=$'a,\n'` did: an adversarial run).
fn line(text: &str) -> String {
    crate::diag::escape_in_line(text)
}
