//! The comparison itself: kernels classified into categories, the category
//! table of each side, and the fusion findings that explain the difference.
//!
//! Findings, strongest first: the same launching operator (`cpu_op`) issuing
//! more kernels per call on one side (`operator`); a run of kernels on one
//! stream that the other side replaces by one, between the same kernels
//! before and after (`sequence`, a Myers diff of per-stream category
//! sequences); a fused category present on one side only (`fused_category`);
//! and count imbalances (`count_imbalance`, weakest).

use super::classify::Classifier;
use super::load::{self, CopyKind, Kernel, Trace};
use serde::Serialize;
use similar::{Algorithm, DiffOp, capture_diff_slices};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub label: String,
    pub platform: load::Platform,
    pub device: Option<String>,
    pub kernels: usize,
    pub kernel_time_us: f64,
    pub device_to_host_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CategoryRow {
    pub category: String,
    /// Per side: count, total µs, share of that side's kernel time.
    pub count: [usize; 2],
    pub time_us: [f64; 2],
    pub share: [f64; 2],
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: &'static str,
    /// The label of the side that fuses.
    pub fused_by: String,
    /// What it runs: one category (or kernel) per occurrence.
    pub fused: String,
    /// What the other side runs instead, in order.
    pub unfused: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    pub occurrences: usize,
    /// Time of those kernels on the fusing side and on the other.
    pub fused_time_us: f64,
    pub unfused_time_us: f64,
    pub time_saved_us: f64,
    pub confidence: f64,
    pub evidence: String,
    /// Device-to-host bytes of each whole trace (A, B): the readback a fusion
    /// like rlx-opt's is meant to cut. Kernels and copies are not linked, so
    /// this is per trace, not per finding.
    pub device_to_host_bytes: [u64; 2],
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub sides: [Side; 2],
    pub categories: Vec<CategoryRow>,
    pub findings: Vec<Finding>,
    /// Stream pairs whose kernel sequences differ by more than
    /// [`MAX_ALIGNMENT_EDITS`]: they are not aligned, so they give no
    /// `sequence` findings (aligning them would cost time quadratic in their
    /// length).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unaligned_streams: Vec<UnalignedStreams>,
}

/// A pair of streams (the n-th longest of each side) too different to align.
#[derive(Debug, Clone, Serialize)]
pub struct UnalignedStreams {
    /// Rank of the streams by kernel count, 0 for the longest of each side.
    pub rank: usize,
    /// Kernels on each side's stream.
    pub kernels: [usize; 2],
}

/// The most edits (kernels inserted or deleted) a pair of streams may differ
/// by and still be aligned. Myers' diff takes O((N + M) · D) for D edits, so
/// the bound keeps the sequence findings linear in the trace size; two runs
/// of one model with a few hundred fusion sites stay well inside it.
pub const MAX_ALIGNMENT_EDITS: usize = 2048;

fn side(label: &str, t: &Trace) -> Side {
    Side {
        label: label.to_string(),
        platform: t.platform,
        device: t.device.clone(),
        kernels: t.kernels.len(),
        kernel_time_us: t.kernels.iter().map(|k| k.dur).sum(),
        device_to_host_bytes: t.copies.iter().filter(|c| c.kind == CopyKind::DeviceToHost).map(|c| c.bytes).sum(),
    }
}

struct Classified<'t> {
    kernel: &'t Kernel,
    /// Shared by every kernel of one name and category.
    category: Arc<str>,
    fused: bool,
    view: bool,
}

/// Each kernel's class, worked out once per distinct (category, name): the
/// loader holds each string once, so the pair of pointers names it. (A
/// class, its category a `String`, made per kernel was 70 bytes a kernel
/// and a glob match each.)
fn classify<'t>(c: &Classifier, t: &'t Trace) -> Vec<Classified<'t>> {
    let mut known: HashMap<(*const u8, *const u8), (Arc<str>, bool, bool)> = HashMap::new();
    t.kernels
        .iter()
        .map(|k| {
            let (category, fused, view) = known
                .entry((k.cat.as_ptr(), k.name.as_ptr()))
                .or_insert_with(|| {
                    let class = c.classify(&k.cat, &k.name);
                    (Arc::from(class.category), class.fused, class.view)
                })
                .clone();
            Classified { kernel: k, category, fused, view }
        })
        .collect()
}

fn categories(sides: [&[Classified]; 2]) -> Vec<CategoryRow> {
    let mut rows: BTreeMap<String, CategoryRow> = BTreeMap::new();
    for (i, ks) in sides.iter().enumerate() {
        for k in ks.iter() {
            let row = rows.entry(k.category.to_string()).or_insert_with(|| CategoryRow { category: k.category.to_string(), count: [0; 2], time_us: [0.0; 2], share: [0.0; 2] });
            row.count[i] += 1;
            row.time_us[i] += k.kernel.dur;
        }
    }
    let totals: Vec<f64> = sides.iter().map(|ks| ks.iter().map(|k| k.kernel.dur).sum()).collect();
    let mut rows: Vec<CategoryRow> = rows.into_values().collect();
    for r in &mut rows {
        for ((share, time), total) in r.share.iter_mut().zip(r.time_us).zip(&totals) {
            *share = if *total > 0.0 { time / total } else { 0.0 };
        }
    }
    rows.sort_by(|a, b| (b.time_us[0] + b.time_us[1]).total_cmp(&(a.time_us[0] + a.time_us[1])));
    rows
}

/// Per operator: the category sequence of one call and the kernels' time, over all calls.
fn operators(ks: &[Classified]) -> HashMap<String, (Vec<String>, usize, f64)> {
    let mut calls: BTreeMap<i64, (String, Vec<&Classified>)> = BTreeMap::new();
    for k in ks {
        if let (Some(op), Some(launch)) = (&k.kernel.cpu_op, k.kernel.launch) {
            calls.entry(launch).or_insert_with(|| (op.to_string(), Vec::new())).1.push(k);
        }
    }
    let mut by_op: HashMap<String, (Vec<String>, usize, f64)> = HashMap::new();
    for (_, (op, kernels)) in calls {
        let entry = by_op.entry(op).or_insert_with(|| (kernels.iter().map(|k| k.category.to_string()).collect(), 0, 0.0));
        entry.1 += 1;
        entry.2 += kernels.iter().map(|k| k.kernel.dur).sum::<f64>();
    }
    by_op
}

fn operator_findings(labels: &[String; 2], sides: [&[Classified]; 2], out: &mut Vec<Finding>) {
    let ops = [operators(sides[0]), operators(sides[1])];
    let mut names: Vec<&String> = ops[0].keys().filter(|k| ops[1].contains_key(*k)).collect();
    names.sort();
    for name in names {
        let (a, b) = (&ops[0][name], &ops[1][name]);
        let per_call = [a.0.len(), b.0.len()];
        if per_call[0] == per_call[1] || per_call.contains(&0) {
            continue;
        }
        let fuser = if per_call[0] < per_call[1] { 0 } else { 1 };
        let (f, u) = (&ops[fuser][name], &ops[1 - fuser][name]);
        out.push(Finding {
            kind: "operator",
            fused_by: labels[fuser].clone(),
            fused: f.0.join(" + "),
            unfused: u.0.clone(),
            operator: Some(name.clone()),
            occurrences: f.1.min(u.1),
            fused_time_us: f.2,
            unfused_time_us: u.2,
            time_saved_us: u.2 - f.2,
            confidence: if f.1 == u.1 { 0.9 } else { 0.7 },
            device_to_host_bytes: [0; 2],
            evidence: format!("`{name}` launches {} kernel(s) per call on {} and {} on {} ({} and {} calls)", per_call[fuser], labels[fuser], per_call[1 - fuser], labels[1 - fuser], f.1, u.1),
        });
    }
}

/// Kernels per stream in time order (views left out), streams matched by kernel count.
fn streams<'a, 'k>(ks: &'a [Classified<'k>]) -> Vec<Vec<&'a Classified<'k>>> {
    let mut by: BTreeMap<i64, Vec<&Classified>> = BTreeMap::new();
    for k in ks.iter().filter(|k| !k.view) {
        by.entry(k.kernel.stream).or_default().push(k);
    }
    let mut streams: Vec<Vec<&Classified>> = by.into_values().collect();
    for s in &mut streams {
        s.sort_by(|a, b| a.kernel.ts.total_cmp(&b.kernel.ts));
    }
    streams.sort_by_key(|s| std::cmp::Reverse(s.len()));
    streams
}

/// A sequence fusion: (the fusing side, its kernel's category, what the other side runs).
type Signature = (usize, String, Vec<String>);

fn sequence_findings(labels: &[String; 2], sides: [&[Classified]; 2], out: &mut Vec<Finding>, unaligned: &mut Vec<UnalignedStreams>) {
    let (sa, sb) = (streams(sides[0]), streams(sides[1]));
    let mut found: BTreeMap<Signature, (usize, f64, f64)> = BTreeMap::new();
    for (rank, (a, b)) in sa.iter().zip(&sb).enumerate() {
        let ca: Vec<&str> = a.iter().map(|k| &*k.category).collect();
        let cb: Vec<&str> = b.iter().map(|k| &*k.category).collect();
        if edit_distance_within(&ca, &cb, MAX_ALIGNMENT_EDITS).is_none() {
            unaligned.push(UnalignedStreams { rank, kernels: [a.len(), b.len()] });
            continue;
        }
        for (old, new) in changed_regions(&capture_diff_slices(Algorithm::Myers, &ca, &cb)) {
            let (ra, rb) = (&a[old], &b[new]);
            let (fuser, fused, unfused) = match (ra.len(), rb.len()) {
                (n, 1) if n > 1 => (1, rb, ra),
                (1, n) if n > 1 => (0, ra, rb),
                _ => continue,
            };
            let key = (fuser, fused[0].category.to_string(), unfused.iter().map(|k| k.category.to_string()).collect());
            let entry = found.entry(key).or_insert((0, 0.0, 0.0));
            entry.0 += 1;
            entry.1 += fused.iter().map(|k| k.kernel.dur).sum::<f64>();
            entry.2 += unfused.iter().map(|k| k.kernel.dur).sum::<f64>();
        }
    }
    for ((fuser, fused, unfused), (n, f_us, u_us)) in found {
        out.push(Finding {
            kind: "sequence",
            fused_by: labels[fuser].clone(),
            evidence: format!(
                "{n}× at the same place of a stream (the kernels around it agree), {} runs `{fused}` where {} runs {}",
                labels[fuser],
                labels[1 - fuser],
                unfused.join(" → ")
            ),
            fused,
            unfused,
            operator: None,
            occurrences: n,
            fused_time_us: f_us,
            unfused_time_us: u_us,
            time_saved_us: u_us - f_us,
            confidence: if n >= 3 { 0.8 } else { 0.6 },
            device_to_host_bytes: [0; 2],
        });
    }
}

/// The fewest insertions and deletions that turn `a` into `b`, if at most
/// `max`: Myers' greedy search for the furthest point on each diagonal,
/// without the path. It stops after `max` rounds, so it costs O(max²) plus
/// the equal runs it follows (at most O((N + M) · max)), never O(N · M) as a
/// diff of two sequences that share nothing would. (`similar` has no cost
/// bound but a wall-clock deadline, which would make the report depend on the
/// machine's load.)
fn edit_distance_within<T: PartialEq>(a: &[T], b: &[T], max: usize) -> Option<usize> {
    const UNREACHED: isize = isize::MIN / 2;
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = max.min(a.len() + b.len()) as isize;
    // furthest[k + offset]: the largest x reached on diagonal k = x − y.
    let offset = max + 1;
    let mut furthest = vec![UNREACHED; 2 * max as usize + 3];
    furthest[offset as usize + 1] = 0;
    for d in 0..=max {
        for k in (-d..=d).step_by(2) {
            let i = (k + offset) as usize;
            // One step down (from diagonal k + 1) or right (from k − 1), whichever reaches further inside the grid.
            let down = Some(furthest[i + 1]).filter(|&x| x != UNREACHED && x - k <= m);
            let right = Some(furthest[i - 1]).filter(|&x| x != UNREACHED && x < n).map(|x| x + 1);
            let Some(mut x) = down.max(right) else {
                furthest[i] = UNREACHED;
                continue;
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            furthest[i] = x;
            if x == n && y == m {
                return Some(d as usize);
            }
        }
    }
    None
}

/// The stretches between equal kernels where the two sides differ, as
/// (range in A, range in B): adjacent deletes, inserts and replaces merged.
fn changed_regions(ops: &[DiffOp]) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let mut regions = Vec::new();
    let mut open: Option<(std::ops::Range<usize>, std::ops::Range<usize>)> = None;
    for op in ops {
        let (old, new) = (op.old_range(), op.new_range());
        if matches!(op, DiffOp::Equal { .. }) {
            regions.extend(open.take());
            continue;
        }
        open = Some(match open.take() {
            Some((o, n)) => (o.start..old.end.max(o.end), n.start..new.end.max(n.end)),
            None => (old, new),
        });
    }
    regions.extend(open);
    regions
}

fn fused_category_findings(labels: &[String; 2], sides: [&[Classified]; 2], rows: &[CategoryRow], out: &mut Vec<Finding>) {
    for row in rows {
        for fuser in 0..2 {
            let is_fused = sides[fuser].iter().any(|k| *k.category == *row.category && k.fused);
            if !is_fused || row.count[1 - fuser] > 0 {
                continue;
            }
            // Confirmed by a sequence finding that names what it replaces?
            if out.iter().any(|f| f.fused == row.category && f.fused_by == labels[fuser]) {
                continue;
            }
            out.push(Finding {
                kind: "fused_category",
                fused_by: labels[fuser].clone(),
                fused: row.category.clone(),
                unfused: Vec::new(),
                operator: None,
                occurrences: row.count[fuser],
                fused_time_us: row.time_us[fuser],
                unfused_time_us: 0.0,
                time_saved_us: 0.0,
                confidence: 0.5,
                device_to_host_bytes: [0; 2],
                evidence: format!("`{}` runs {}× on {} and never on {}; what it replaces was not aligned", row.category, row.count[fuser], labels[fuser], labels[1 - fuser]),
            });
        }
    }
}

fn imbalance_findings(labels: &[String; 2], rows: &[CategoryRow], out: &mut Vec<Finding>) {
    for row in rows {
        let [a, b] = row.count;
        if a == 0 || b == 0 || a + b < 50 || row.category.starts_with("other") {
            continue;
        }
        let ratio = a.max(b) as f64 / a.min(b) as f64;
        if ratio < 1.5 {
            continue;
        }
        let fuser = if a < b { 0 } else { 1 };
        out.push(Finding {
            kind: "count_imbalance",
            fused_by: labels[fuser].clone(),
            fused: row.category.clone(),
            unfused: vec![row.category.clone()],
            operator: None,
            occurrences: row.count[fuser],
            fused_time_us: row.time_us[fuser],
            unfused_time_us: row.time_us[1 - fuser],
            time_saved_us: row.time_us[1 - fuser] - row.time_us[fuser],
            confidence: 0.3,
            device_to_host_bytes: [0; 2],
            evidence: format!("{} runs `{}` {:.1}× as often ({} vs {} calls)", labels[1 - fuser], row.category, ratio, row.count[1 - fuser], row.count[fuser]),
        });
    }
}

/// Compare two traces: the category table of both and the findings, most
/// confident first.
pub fn diff(labels: [String; 2], a: &Trace, b: &Trace, classifier: &Classifier) -> Report {
    let (ka, kb) = (classify(classifier, a), classify(classifier, b));
    let sides = [&ka[..], &kb[..]];
    let rows = categories(sides);
    let mut findings = Vec::new();
    let mut unaligned_streams = Vec::new();
    operator_findings(&labels, sides, &mut findings);
    sequence_findings(&labels, sides, &mut findings, &mut unaligned_streams);
    fused_category_findings(&labels, sides, &rows, &mut findings);
    imbalance_findings(&labels, &rows, &mut findings);
    findings.sort_by(|x, y| y.confidence.total_cmp(&x.confidence).then(y.time_saved_us.total_cmp(&x.time_saved_us)));
    let sides = [side(&labels[0], a), side(&labels[1], b)];
    for f in &mut findings {
        f.device_to_host_bytes = [sides[0].device_to_host_bytes, sides[1].device_to_host_bytes];
    }
    Report { sides, categories: rows, findings, unaligned_streams }
}

/// One trace's side and category table (its rows' second side empty).
pub fn summary(label: &str, t: &Trace, classifier: &Classifier) -> (Side, Vec<CategoryRow>) {
    let k = classify(classifier, t);
    let empty: Vec<Classified> = Vec::new();
    (side(label, t), categories([&k[..], &empty[..]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The edits in a full diff: what the bounded search must agree with.
    fn edits_by_diff(a: &[u8], b: &[u8]) -> usize {
        capture_diff_slices(Algorithm::Myers, a, b)
            .iter()
            .map(|op| match *op {
                DiffOp::Equal { .. } => 0,
                DiffOp::Delete { old_len, .. } => old_len,
                DiffOp::Insert { new_len, .. } => new_len,
                DiffOp::Replace { old_len, new_len, .. } => old_len + new_len,
            })
            .sum()
    }

    #[test]
    fn bounded_edit_distance_agrees_with_a_full_diff() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..2000 {
            let a: Vec<u8> = (0..next(24)).map(|_| next(3) as u8).collect();
            let b: Vec<u8> = (0..next(24)).map(|_| next(3) as u8).collect();
            let want = edits_by_diff(&a, &b);
            assert_eq!(edit_distance_within(&a, &b, 64), Some(want), "{a:?} {b:?}");
            assert_eq!(edit_distance_within(&a, &b, want), Some(want), "{a:?} {b:?}");
            if want > 0 {
                assert_eq!(edit_distance_within(&a, &b, want - 1), None, "{a:?} {b:?}");
            }
        }
        assert_eq!(edit_distance_within::<u8>(&[], &[], 0), Some(0));
        assert_eq!(edit_distance_within(b"abc", b"", 3), Some(3));
    }

    /// Two long streams that share nothing are reported as not aligned, in
    /// O(MAX_ALIGNMENT_EDITS²) steps rather than a diff of 10^10.
    #[test]
    fn streams_that_share_nothing_are_not_aligned() {
        let a = vec!["x"; 100_000];
        let b = vec!["y"; 100_000];
        assert_eq!(edit_distance_within(&a, &b, MAX_ALIGNMENT_EDITS), None);
        let mut near = a.clone();
        near[50_000] = "y";
        assert_eq!(edit_distance_within(&a, &near, MAX_ALIGNMENT_EDITS), Some(2));
    }
}
