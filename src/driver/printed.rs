//! The graphs of a run on their way out, printed as the reader hands them
//! over one at a time (an MLIR module of a million functions is never held
//! as graphs). A chunk of one graph (RLX text, JSON) is printed straight to
//! the output; a module's graphs are printed into memory and written when
//! the whole module is done, or dropped with its error, so that a module
//! with a bad function prints none, as before.

use super::instrument::Timings;
use crate::cli::say;
use crate::diag::Diagnostic;
use crate::format::{Emit, OutputTooLarge, SPLIT_MARKER, Tally};
use crate::ir::Graph;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::output::Sink;
use std::io::Write;

pub(super) struct Printed<'f> {
    pub(super) sink: Sink,
    emit: Emit,
    /// The input, for the errors said here.
    file: &'f str,
    /// Whether a chunk may hold several graphs (MLIR input): they are
    /// printed into `chunk` first.
    several: bool,
    /// The chunk being read, printed, where it may hold several graphs
    /// (not MLIR output: see `mlir_modules`).
    chunk: Vec<u8>,
    /// Why the output refused a graph printed straight to it.
    refused: Option<std::io::Error>,
    /// Whether a graph was printed in an earlier chunk, and in this one:
    /// every graph but the first comes after a separator.
    printed: bool,
    printed_in_chunk: bool,
    /// Bytes of output so far, against MAX_OUTPUT_BYTES: each graph is
    /// measured before it is printed (a 200-byte MLIR splat would otherwise
    /// print 1.1 GB of RLX text), and refused as its chunk's error; and as
    /// they were when this chunk began.
    written: u64,
    written_before_chunk: u64,
    /// Whether a graph failed: the run fails, and writes nothing.
    pub(super) failed: bool,
    /// MLIR output is one module per input chunk (as mlir-opt prints split
    /// input), holding its graphs, printed at the end.
    pub(super) mlir_modules: Vec<Vec<Graph>>,
}

impl<'f> Printed<'f> {
    pub(super) fn new(sink: Sink, emit: Emit, several: bool, file: &'f str) -> Self {
        let (chunk, mlir_modules) = (Vec::new(), Vec::new());
        let (printed, printed_in_chunk, written, written_before_chunk) = (false, false, 0, 0);
        Printed { sink, emit, file, several, chunk, refused: None, printed, printed_in_chunk, written, written_before_chunk, failed: false, mlir_modules }
    }

    pub(super) fn start_chunk(&mut self) {
        self.chunk.clear();
        self.printed_in_chunk = false;
        self.written_before_chunk = self.written;
        self.mlir_modules.push(Vec::new());
    }

    /// Write what the chunk printed into memory: its graphs count as printed.
    pub(super) fn end_chunk(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.refused.take() {
            return Err(e);
        }
        if self.several {
            self.sink.write_all(&self.chunk)?;
            self.sink.flush_stdout()?;
        }
        self.printed |= self.printed_in_chunk;
        Ok(())
    }

    /// The chunk failed: none of its graphs is printed.
    pub(super) fn drop_chunk(&mut self) {
        self.failed = true;
        self.chunk.clear();
        self.printed_in_chunk = false;
        self.written = self.written_before_chunk;
        self.mlir_modules.last_mut().expect("one per chunk").clear();
    }

    /// Print `graph` into the chunk (a graph too large to print is said, and
    /// fails the run).
    pub(super) fn add(&mut self, timings: &mut Timings, graph: Graph) {
        // Graphs and JSON documents are separated as mlir-opt separates
        // split output, so `--split-input-file` reads the output back
        // (concatenated JSON documents were no input rlx-opt takes). DOT
        // needs none: Graphviz reads a file of several graphs.
        let first = !(self.printed || self.printed_in_chunk);
        let separator = if !first && matches!(self.emit, Emit::Graph | Emit::Json) { format!("{SPLIT_MARKER}\n") } else { String::new() };
        let room = MAX_OUTPUT_BYTES.saturating_sub(self.written).saturating_sub(separator.len() as u64);
        if let Err(e) = self.emit.check_size(&graph, room) {
            say(&Diagnostic::whole_file(OutputTooLarge::to_string(&e)).render(self.file));
            self.failed = true;
            return;
        }
        if self.emit == Emit::Mlir {
            self.written = self.written.saturating_add(crate::format::mlir_dense_len(&graph));
            self.mlir_modules.last_mut().expect("one per chunk").push(graph);
            return;
        }
        if self.refused.is_some() {
            return;
        }
        let printed = timings.time("print", || {
            let mut out: Tally<'_, dyn Write> = if self.several { Tally::new(&mut self.chunk) } else { Tally::new(&mut self.sink) };
            out.write_all(separator.as_bytes())?;
            self.emit.write(&graph, &mut out)?;
            self.written = self.written.saturating_add(out.total());
            // Each graph appears as soon as it is done, in file order with
            // the errors of the others.
            if !self.several {
                self.sink.flush_stdout()?;
            }
            Ok(())
        });
        match printed {
            Ok(()) => self.printed_in_chunk = true,
            Err(e) => self.refused = Some(e),
        }
    }
}
