//! rlx-opt: an optimizer for RLX tensor graphs in the style of `mlir-opt`.
//!
//! A tour: read a graph in RLX's textual IR, verify it, run a pass, and print
//! it back in the same format.
//!
//! ```
//! use rlx_opt::{analysis, format::rlx_text, passes, pass::PassContext, verify::verify};
//!
//! let text = r#"graph @welch {
//!   %0 = {"Input":{"name":"segs"}} : [16, 64] f32 #"segs"
//!   %1 = {"Binary":"Sub"}(%0, %0) : [16, 64] f32
//!   %2 = {"Concat":{"axis":1}}(%0, %1) : [16, 128] f32
//!   %3 = {"Fft":{"inverse":false,"norm":"Backward","algo":"Native"}}(%2) : [16, 128] f32
//!   %4 = {"WelchPeaks":{"k":4,"n_segments":8}}(%3) : [2, 8] f32
//!   %5 = {"Activation":"Relu"}(%0) : [16, 64] f32
//!   return %4
//! }
//! "#;
//! let mut graph = rlx_text::parse(text).unwrap();
//! verify(&graph).unwrap();
//!
//! // What RLX's IO gate sees: 4 launches, and WelchPeaks is a host thunk.
//! let profile = analysis::profile(&graph);
//! assert_eq!((profile.kernel_launches, profile.sync_points), (5, 1));
//!
//! // `dce` drops the unused Relu; the printed text is RLX's own format.
//! let mut cx = PassContext::new(analysis::Target::Cuda, rlx_opt::pass::ReportFormat::Text);
//! use rlx_opt::pass::Pass;
//! passes::Dce.run(&mut graph, &mut cx).unwrap();
//! verify(&graph).unwrap();
//! assert!(!rlx_text::print(&graph).contains("Relu"));
//! ```

pub mod analysis;
pub mod cli;
pub mod diag;
pub mod driver;
pub mod format;
pub mod fused;
pub mod fusion_report;
pub mod ir;
pub mod limits;
pub mod lower;
pub mod matcher;
pub mod mlir_pass;
pub mod opt_in;
pub mod output;
pub mod pass;
#[path = "../passes/mod.rs"]
pub mod passes;
pub mod rewrite;
#[cfg(feature = "runtime")]
pub mod run_cli;
#[cfg(feature = "runtime")]
pub mod runtime;
pub mod testgen;
#[cfg(feature = "trace")]
pub mod trace;
#[cfg(feature = "trace")]
pub mod trace_cli;
pub mod verify;
