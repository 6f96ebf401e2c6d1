//! What the driver records around passes, as MLIR's `PassInstrumentation`:
//! hooks the pass loop calls after every pass, for `--timing`,
//! `--pass-statistics` and `--print-ir-after-all`.

use std::io::Write as _;
use crate::format::Emit;
use crate::ir::Graph;
use crate::pass::Statistic;
use std::time::{Duration, Instant};

/// Called by the pass loop after every pass.
pub trait PassInstrumentation {
    fn run_after_pass(&mut self, pass: &'static str, graph: &Graph, stats: &[Statistic], elapsed: Duration);
}

/// Wall-clock time per phase, in first-seen order.
#[derive(Default)]
pub struct Timings(Vec<(String, Duration)>);

impl Timings {
    pub fn time<T>(&mut self, name: &str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let value = f();
        self.add(name, start.elapsed());
        value
    }

    pub fn report(&self) -> String {
        let total: Duration = self.0.iter().map(|(_, d)| *d).sum();
        let mut out = String::from(RULE);
        out.push_str("                      ... Execution time report ...\n");
        out.push_str(RULE);
        out.push_str(&format!("  Total Execution Time: {:.4} seconds\n\n  ----Wall Time----  ----Name----\n", total.as_secs_f64()));
        for (name, d) in &self.0 {
            let share = if total.is_zero() { 0.0 } else { 100.0 * d.as_secs_f64() / total.as_secs_f64() };
            out.push_str(&format!("    {:.4} ({share:5.1}%)  {name}\n", d.as_secs_f64()));
        }
        out.push_str(&format!("    {:.4} (100.0%)  Total\n", total.as_secs_f64()));
        out
    }
}

const RULE: &str = "===-------------------------------------------------------------------------===\n";

/// Statistics summed per pass over every graph of the input.
#[derive(Default)]
pub struct PassStatistics(Vec<(&'static str, Vec<Statistic>)>);

impl PassStatistics {
    fn add(&mut self, pass: &'static str, stats: &[Statistic]) {
        let index = match self.0.iter().position(|(p, _)| *p == pass) {
            Some(i) => i,
            None => {
                self.0.push((pass, Vec::new()));
                self.0.len() - 1
            }
        };
        let entry = &mut self.0[index].1;
        for s in stats.iter().cloned() {
            match entry.iter_mut().find(|e| e.name == s.name) {
                Some(e) => e.value += s.value,
                None => entry.push(s),
            }
        }
    }

    pub fn report(&self) -> String {
        let mut out = String::from(RULE);
        out.push_str("                         ... Pass statistics report ...\n");
        out.push_str(RULE);
        for (pass, stats) in &self.0 {
            out.push_str(&format!("'{pass}'\n"));
            for s in stats.iter().cloned() {
                out.push_str(&format!("  (S) {} {} - {}\n", s.value, s.name, s.description));
            }
        }
        out
    }
}


impl Timings {
    /// Add `elapsed` to phase `name`.
    pub fn add(&mut self, name: &str, elapsed: Duration) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some((_, total)) => *total += elapsed,
            None => self.0.push((name.to_string(), elapsed)),
        }
    }
}

impl PassInstrumentation for Timings {
    fn run_after_pass(&mut self, pass: &'static str, _: &Graph, _: &[Statistic], elapsed: Duration) {
        self.add(pass, elapsed);
    }
}

impl PassInstrumentation for PassStatistics {
    fn run_after_pass(&mut self, pass: &'static str, _: &Graph, stats: &[Statistic], _: Duration) {
        self.add(pass, stats);
    }
}

/// `--print-ir-after-all`: the graph on stderr, in the output format.
pub struct IrPrinter {
    emit: Emit,
    /// Why stderr took no more (hooks return nothing; the pass loop checks).
    pub error: Option<crate::cli::StreamError>,
}

impl IrPrinter {
    pub fn new(emit: Emit) -> IrPrinter {
        IrPrinter { emit, error: None }
    }
}

impl PassInstrumentation for IrPrinter {
    fn run_after_pass(&mut self, pass: &'static str, graph: &Graph, _: &[Statistic], _: Duration) {
        if self.error.is_none() {
            // Streamed: a graph's text (its constants above all) is never held whole.
            self.error = crate::cli::write_err(|err| {
                writeln!(err, "// -----// IR Dump After {pass} //----- //")?;
                self.emit.write(graph, err)
            })
            .err();
        }
    }
}
