//! MLIR's generic form: every graph the other tests use goes graph → MLIR →
//! graph unchanged (before and after each fusing pass, for each target),
//! through rlx-opt's own reader and writer and, with the `mlir` feature,
//! through MLIR's parser, verifier and printer; the MLIR passes
//! (`fuse-welch-peaks`, `fuse-log-mel`) fuse what the graph passes fuse;
//! bad MLIR gets clear errors.

mod common;

use rlx_opt::format::{json, mlir, rlx_text};
use rlx_opt::ir::{Graph, view};
use rlx_opt::mlir_pass::{MODULE_PASSES, ModuleFusion, ModulePassError};
use rlx_opt::pass::{PassInfo, PassOptions};
use rlx_opt::passes::{fuse_log_mel, fuse_welch_peaks};
use rlx_opt::verify::verify;

/// Every graph of the fixtures, examples and RLX-printed corpus.
fn corpus() -> Vec<(String, Graph)> {
    let mut out = Vec::new();
    let mut examples: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/graphs")).unwrap().map(|e| e.unwrap().path()).collect();
    examples.sort();
    for path in common::fixture_paths().into_iter().chain(examples.into_iter().filter(|p| p.extension().is_some_and(|e| e == "graph"))) {
        out.push((path.display().to_string(), rlx_text::parse(&std::fs::read_to_string(&path).unwrap()).unwrap()));
    }
    for (name, text) in common::rlx_printed_corpus() {
        out.push((name, rlx_text::parse(&text).unwrap()));
    }
    for (_, graph) in &mut out {
        verify(graph).unwrap();
        view::ensure_dependency_order(graph);
    }
    out
}

/// `graph` after the graph pass `info` with `options`.
fn fused_by(info: &PassInfo, options: &str, graph: &Graph) -> Graph {
    let mut fused = graph.clone();
    let pass = (info.create)(&PassOptions::parse(options, info).unwrap()).unwrap();
    let mut cx = rlx_opt::pass::PassContext::new(rlx_opt::analysis::Target::Cpu, rlx_opt::pass::ReportFormat::Text);
    pass.run(&mut fused, &mut cx).unwrap();
    fused
}

/// The same corpus, each graph also after each fusing pass for the targets
/// whose gates differ (`fuse-welch-peaks`'s under the names they always had).
fn corpus_with_fusions() -> Vec<(String, Graph)> {
    let mut out = Vec::new();
    for (name, graph) in corpus() {
        for info in MODULE_PASSES {
            for target in ["cpu", "cuda", "rocm"] {
                let fused = fused_by(info, &format!("target={target}"), &graph);
                if fused != graph {
                    let pass = if info.name == fuse_welch_peaks::INFO.name { String::new() } else { format!(" by {}", info.name) };
                    out.push((format!("{name}{pass} fused for {target}"), fused));
                }
            }
        }
        out.push((name, graph));
    }
    out
}

/// Whether `graph` holds the fused op called `name` (`rlx_opt.log_mel`).
fn has_custom(graph: &Graph, name: &str) -> bool {
    rlx_text::print(graph).contains(&format!("\"name\":\"{name}\""))
}

fn assert_same(name: &str, want: &Graph, got: &Graph) {
    assert_eq!(rlx_text::print(got), rlx_text::print(want), "{name}: RLX text differs");
    assert_eq!(json::print(got), json::print(want), "{name}: JSON form differs");
}

#[test]
fn every_graph_survives_graph_to_mlir_to_graph() {
    let graphs = corpus_with_fusions();
    assert!(graphs.len() > 40, "corpus has {} graphs", graphs.len());
    assert!(graphs.iter().any(|(n, _)| n.ends_with("fused for cuda")));
    // Both fused ops are in the corpus, so both go through MLIR and back.
    assert!(graphs.iter().any(|(n, g)| n.contains("by fuse-log-mel") && has_custom(g, "rlx_opt.log_mel")));
    assert!(graphs.iter().any(|(_, g)| has_custom(g, "rlx_opt.welch_peaks")));
    assert!(graphs.iter().any(|(_, g)| rlx_text::print(g).contains("LogMel(")), "no unfused LogMel in the corpus");
    for (name, graph) in &graphs {
        let text = mlir::print(std::slice::from_ref(graph));
        let back = mlir::parse(&text, 1).unwrap_or_else(|d| panic!("{name}: {}\n{text}", d.render("out.mlir")));
        assert_eq!(back.len(), 1);
        assert_same(name, graph, &back[0]);
    }
}

#[test]
fn a_module_of_several_graphs_keeps_them_in_order() {
    let graphs: Vec<Graph> = corpus().into_iter().take(4).map(|(_, g)| g).collect();
    let back = mlir::parse(&mlir::print(&graphs), 1).unwrap();
    assert_eq!(back.len(), 4);
    for (want, got) in graphs.iter().zip(&back) {
        assert_same(&want.name, want, got);
    }
}

#[test]
fn labels_positions_names_and_dynamic_symbols_survive() {
    let text = r#"graph @odd {
  %9 = {"Input":{"name":"b"}} : [?2, 4] f32 #"b in"
  %3 = {"Activation":"Relu"}(%9) : [?2, 4] f32 #"relu \"x\""
  %4 = {"Param":{"name":"w"}} : [4] f32
  %12 = {"Binary":"Add"}(%3, %4) : [?2, 4] f32
  %13 = {"Softmax":{"axis":1,"a":0.5}}(%12) : [?2, 4] f32
  %14 = Clamp{min: -inf, max: 1.0}(%13) : [?2, 4] f32
  return %14, %3, %14
}
"#;
    let graph = rlx_text::parse(text).unwrap();
    let mlir_text = mlir::print(std::slice::from_ref(&graph));
    assert!(mlir_text.contains("rlx.symbols = array<i64: 2>"), "{mlir_text}");
    assert!(mlir_text.contains("rlx.text = \"{\\\"Softmax\\\":{\\\"axis\\\":1,\\\"a\\\":0.5}}\""), "{mlir_text}");
    let back = mlir::parse(&mlir_text, 1).unwrap();
    assert_same("odd", &graph, &back[0]);
}

#[test]
fn a_graph_of_inputs_only_survives() {
    let graph = rlx_text::parse("graph @ident {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4] f32 #\"x\"\n  return %0, %0\n}\n").unwrap();
    let back = mlir::parse(&mlir::print(std::slice::from_ref(&graph)), 1).unwrap();
    assert_same("ident", &graph, &back[0]);
}

#[test]
fn edited_attributes_are_honoured() {
    let graph = rlx_text::parse("graph @g {\n  %0 = {\"Input\":{\"name\":\"x\"}} : [4, 8] f32\n  %1 = {\"Narrow\":{\"axis\":1,\"start\":0,\"len\":4}}(%0) : [4, 4] f32\n  return %1\n}\n").unwrap();
    let text = mlir::print(std::slice::from_ref(&graph)).replace("start = 0 : i64", "start = 2 : i64");
    let back = mlir::parse(&text, 1).unwrap();
    assert!(rlx_text::print(&back[0]).contains(r#"{"Narrow":{"axis":1,"start":2,"len":4}}"#));
}

fn error_of(text: &str) -> String {
    mlir::parse(text, 1).map(|_| ()).unwrap_err().render("in.mlir")
}

/// A generic-form module of one function @g: its properties before
/// `sym_name`, its one argument's type, its body's ops.
fn generic_function(properties: &str, arg: &str, body: &str) -> String {
    format!("\"builtin.module\"() ({{\n  \"func.func\"() <{{{properties}, sym_name = \"g\"}}> ({{\n  ^bb0(%0: {arg}):\n{body}  }}) : () -> ()\n}}) : () -> ()\n")
}

#[test]
fn bad_mlir_gets_errors_with_places() {
    let relu = |ty: &str| format!("func.func @f(%a: tensor<4x{ty}>) -> tensor<4x{ty}> {{\n  %0 = \"rlx.Activation\"(%a) {{rlx.value = \"Relu\"}} : (tensor<4x{ty}>) -> tensor<4x{ty}>\n  return %0 : tensor<4x{ty}>\n}}\n");
    assert_eq!(error_of(&relu("f8E4M3FN")), "in.mlir:1:14: error: argument %a: unknown element type `f8E4M3FN` (rlx-opt reads f32, f16, bf16, f64, i1, i8, i16, i32, i64, ui8, ui32, complex<f32>, complex<f64>)");
    assert!(error_of(&relu("f32").replace("(%a)", "(%b)")).starts_with("in.mlir:2:25: error: use of undefined value %b"));
    assert!(error_of(&relu("f32").replace(": (tensor<4xf32>)", ": (tensor<5xf32>)")).contains("%a is used as tensor<5xf32> but defined as tensor<4xf32>"));
    assert!(error_of(&relu("f32").replace("\"rlx.Activation\"", "\"arith.negf\"")).starts_with("in.mlir:2:3: error: `arith.negf` is not an rlx op"));
    assert!(error_of(&relu("f32").replace("= \"Relu\"", "= @sym")).contains("attribute `rlx.value`: unsupported attribute kind"));
    assert!(error_of("func.func @f() {\n  %0 = arith.constant 1 : i32\n}\n").starts_with("in.mlir:2:8: error: cannot read the custom form of `arith.constant`"));
    assert!(error_of("\"builtin.module\"() ({\n").contains("unterminated region"));
    // What was taken and changed without a word (an adversarial run): the
    // function's argument types against its block's, an op after the
    // return, an rlx op's region.
    let generic = |declared: &str| {
        generic_function(
            &format!("function_type = ({declared}) -> tensor<8xf32>"),
            "tensor<8xf32>",
            "    %1 = \"rlx.Activation\"(%0) {rlx.value = \"Relu\"} : (tensor<8xf32>) -> tensor<8xf32>\n    \"func.return\"(%1) : (tensor<8xf32>) -> ()\n",
        )
    };
    assert!(mlir::parse(&generic("tensor<8xf32>"), 1).is_ok());
    assert_eq!(error_of(&generic("tensor<4xf32>")), "in.mlir:3:8: error: function @g declares argument 0 as [4] f32 but its block takes [8] f32");
    assert_eq!(error_of(&generic("tensor<8xf32>, tensor<8xf32>")), "in.mlir:2:3: error: function @g declares 2 arguments but its block takes 1");
    let after = relu("f32").replace("  return %0 : tensor<4xf32>\n", "  return %0 : tensor<4xf32>\n  %1 = \"rlx.Activation\"(%a) {rlx.value = \"Relu\"} : (tensor<4xf32>) -> tensor<4xf32>\n");
    assert_eq!(error_of(&after), "in.mlir:3:3: error: `func.return` must be the last op of its block");
    let region = relu("f32").replace("(%a) {rlx.value", "(%a) ({\n  }) {rlx.value");
    assert_eq!(error_of(&region), "in.mlir:2:3: error: `rlx.Activation` has 1 region(s); rlx ops have none");
    // Attributes were lost: one a known op has no field for, a key given
    // twice (the last won), a second op on an argument, arg_attrs past the
    // arguments.
    let narrow = |attrs: &str| format!("func.func @n(%a: tensor<4x8xf32>) -> tensor<4x4xf32> {{\n  %0 = \"rlx.Narrow\"(%a) {{{attrs}}} : (tensor<4x8xf32>) -> tensor<4x4xf32>\n  return %0 : tensor<4x4xf32>\n}}\n");
    assert!(mlir::parse(&narrow("axis = 1 : i64, start = 0 : i64, len = 4 : i64"), 1).is_ok());
    assert_eq!(error_of(&narrow("axis = 1 : i64, start = 0 : i64, len = 4 : i64, important = \"keep me\"")), "in.mlir:2:3: error: `rlx.Narrow`: attribute `important` is not a field of `Narrow` (it would be dropped)");
    assert_eq!(error_of(&narrow("axis = 1 : i64, start = 0 : i64, start = 2 : i64, len = 4 : i64")), "in.mlir:2:3: error: `rlx.Narrow`: attribute `start` is given twice");
    assert_eq!(error_of(&relu("f32").replace("rlx.value = \"Relu\"", "rlx.value = \"Relu\", rlx.value = \"Tanh\"")), "in.mlir:2:3: error: `rlx.Activation`: attribute `rlx.value` is given twice");
    assert_eq!(error_of(&relu("f32").replace("{rlx.value = \"Relu\"}", "{rlx.id = 1 : i64, rlx.id = 2 : i64, rlx.value = \"Relu\"}")), "in.mlir:2:3: error: `rlx.Activation`: attribute `rlx.id` is given twice");
    assert_eq!(error_of(&relu("f32").replace("\"rlx.Activation\"(%a) {rlx.value = \"Relu\"}", "\"rlx.Foo\"(%a) {q = {a = 1 : i64, a = 2 : i64}}")), "in.mlir:2:3: error: `rlx.Foo`: attribute `q`: key `a` is given twice");
    let args = |attrs: &str| generic_function(&format!("arg_attrs = [{attrs}], function_type = (tensor<4xf32>) -> tensor<4xf32>"), "tensor<4xf32>", "    \"func.return\"(%0) : (tensor<4xf32>) -> ()\n");
    assert!(mlir::parse(&args("{rlx.Param = {name = \"b\"}}"), 1).is_ok());
    assert_eq!(error_of(&args("{rlx.Input = {name = \"b\"}, rlx.Param = {name = \"c\"}}")), "in.mlir:3:8: error: argument %0: `rlx.Input` and `rlx.Param` both spell its op; an argument is one op");
    assert_eq!(error_of(&args("{rlx.Input = {name = \"b\", extra = 1 : i64}}")), "in.mlir:3:8: error: argument %0: attribute `extra` is not a field of `Input` (it would be dropped)");
    assert_eq!(error_of(&args("{}, {rlx.Input = {name = \"c\"}}")), "in.mlir:2:3: error: `arg_attrs` has 2 entries for 1 arguments");
    // A location alias must be defined, and lead to a location.
    let located = |aliases: &str| relu("f32").replace(" : (tensor<4xf32>) -> tensor<4xf32>\n", " : (tensor<4xf32>) -> tensor<4xf32> loc(#l0)\n") + aliases;
    assert_eq!(mlir::parse(&located("#l0 = loc(#l1)\n#l1 = loc(\"relu\")\n"), 1).unwrap()[0].nodes()[1].name.as_deref(), Some("relu"));
    assert_eq!(error_of(&located("")), "in.mlir:2:3: error: `rlx.Activation`: location alias #l0 is not defined");
    assert!(error_of(&located("#l0 = loc(#l1)\n#l1 = loc(#l0)\n")).ends_with("location aliases refer to each other more than 128 deep (a cycle?)"));
    // A chain of 128 aliases (#l0 … #l127) ends in its location; one more does not.
    let chain = |aliases: usize| (0..aliases - 1).map(|i| format!("#l{i} = loc(#l{})\n", i + 1)).collect::<String>() + &format!("#l{} = loc(\"deep\")\n", aliases - 1);
    assert_eq!(mlir::parse(&located(&chain(128)), 1).unwrap()[0].nodes()[1].name.as_deref(), Some("deep"));
    assert!(error_of(&located(&chain(129))).ends_with("more than 128 deep (a cycle?)"));
}

#[test]
fn rewriting_functions_leaves_everything_else_byte_for_byte() {
    let graph = corpus().into_iter().find(|(n, _)| n.ends_with("welch_native.graph")).unwrap().1;
    let func = mlir::print(std::slice::from_ref(&graph));
    let func = func.lines().skip(1).take_while(|l| !l.starts_with("})")).collect::<Vec<_>>().join("\n");
    let other = "  \"func.func\"() <{function_type = (i32) -> i32, sym_name = \"other\"}> ({\n  ^bb0(%x: i32):\n    %y = \"arith.addi\"(%x, %x) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32\n    \"func.return\"(%y) : (i32) -> ()\n  }) : () -> ()\n  func.func private @declared(tensor<4xf32> {rlx.note = 1 : i64}) -> tensor<4xf32>";
    // (The declaration, in custom form, was a syntax error.)
    let text = format!("#map = affine_map<(d0) -> (d0)>\n\"builtin.module\"() ({{\n{other}\n  \"builtin.module\"() ({{\n{func}\n  }}) {{sym_name = \"inner\"}} : () -> ()\n}}) : () -> ()\n");
    let fusion = rlx_opt::mlir_pass::ModuleFusion::from_options("target=cuda").unwrap();
    let out = fusion.run(&text).unwrap();
    assert!(out.starts_with(&format!("#map = affine_map<(d0) -> (d0)>\n\"builtin.module\"() ({{\n{other}\n  \"builtin.module\"() ({{\n")), "{out}");
    assert!(out.contains("\"rlx.Custom\"") && !out.contains("rlx.WelchPeaks"), "{out}");
    assert!(out.ends_with("  }) {sym_name = \"inner\"} : () -> ()\n}) : () -> ()\n"), "{out}");
    // Nothing to fuse for rocm: the module comes back as it was.
    let unchanged = rlx_opt::mlir_pass::ModuleFusion::from_options("target=rocm").unwrap().run(&text).unwrap();
    assert_eq!(unchanged, text);
    let e = rlx_opt::mlir_pass::ModuleFusion::from_options("target=gpu9").err().unwrap();
    assert!(matches!(&e, rlx_opt::pass::OptionError::UnknownTarget { name, .. } if name == "gpu9"), "{e}");
    assert!(e.to_string().contains("unknown target `gpu9`"));
    let e = rlx_opt::mlir_pass::ModuleFusion::from_options("fusion-report=").err().unwrap();
    assert!(matches!(e, rlx_opt::pass::OptionError::MissingValue { key: "fusion-report", .. }), "{e}");
    // The report may not replace the profile the pass reads (it did: a review).
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.json");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/profiles/cpu.json"), &profile).unwrap();
    let before = std::fs::read(&profile).unwrap();
    let p = profile.to_str().unwrap();
    let e = rlx_opt::mlir_pass::ModuleFusion::from_options(&format!("profile={p} fusion-report={p}")).unwrap().run(&text).unwrap_err();
    assert!(e.message.contains("it is a file this run reads"), "{e:?}");
    assert_eq!(std::fs::read(&profile).unwrap(), before);
}

/// The graphs of the corpus with a log-mel chain.
fn log_mel_graphs() -> Vec<(String, Graph)> {
    let graphs: Vec<_> = corpus().into_iter().filter(|(_, g)| rlx_text::print(g).contains("LogMel(")).collect();
    assert!(graphs.len() >= 4, "only {} log-mel graphs in the corpus", graphs.len());
    graphs
}

#[test]
fn the_module_pass_fuse_log_mel_fuses_what_the_graph_pass_fuses() {
    let mut fused_any = false;
    for (name, graph) in log_mel_graphs() {
        for options in ["target=cpu", "target=cuda", "target=wgpu force=true"] {
            let want = fused_by(&fuse_log_mel::INFO, options, &graph);
            let module = mlir::print(std::slice::from_ref(&graph));
            let fusion = ModuleFusion::for_pass("fuse-log-mel", options).unwrap();
            assert_eq!(fusion.name(), "fuse-log-mel");
            let got = mlir::parse(&fusion.run(&module).unwrap(), 1).unwrap();
            assert_same(&format!("{name} {{{options}}}"), &want, &got[0]);
            fused_any |= has_custom(&want, "rlx_opt.log_mel");
            // fuse-welch-peaks leaves a log-mel chain as it is, byte for byte.
            let welch = ModuleFusion::from_options(options).unwrap();
            assert_eq!(welch.name(), "fuse-welch-peaks");
            if !has_custom(&fused_by(&fuse_welch_peaks::INFO, options, &graph), "rlx_opt.welch_peaks") {
                assert_eq!(welch.run(&module).unwrap(), module, "{name}: fuse-welch-peaks changed a module it fuses nothing in");
            }
        }
    }
    assert!(fused_any, "fuse-log-mel fused no graph of the corpus");
}

#[test]
fn module_passes_are_the_fusing_passes_and_errors_name_theirs() {
    assert_eq!(MODULE_PASSES.map(|p| p.name), ["fuse-welch-peaks", "fuse-log-mel"]);
    assert_eq!(rlx_opt::mlir_pass::module_pass("fuse-log-mel").map(|p| p.name), Some("fuse-log-mel"));
    let e = ModuleFusion::for_pass("dce", "").err().unwrap();
    assert!(matches!(&e, ModulePassError::UnknownPass { name, .. } if name == "dce"), "{e}");
    assert_eq!(e.to_string(), "no module pass `dce` (MLIR hosts run fuse-welch-peaks, fuse-log-mel)");
    let e = ModuleFusion::for_pass("fuse-log-mel", "min-gain-ns=lots").err().unwrap();
    assert_eq!(e.to_string(), "option `min-gain-ns` of `fuse-log-mel` takes a number, got `lots`");
    let e = ModuleFusion::for_pass("fuse-log-mel", "bogus=1").err().unwrap();
    assert!(e.to_string().starts_with("pass `fuse-log-mel` has no option `bogus`"), "{e}");
    let e = ModuleFusion::for_pass("fuse-log-mel", "fusion-report=").err().unwrap();
    assert!(matches!(e, ModulePassError::Option(rlx_opt::pass::OptionError::MissingValue { key: "fusion-report", .. })), "{e}");
    // fuse-welch-peaks keeps its messages.
    let e = ModuleFusion::from_options("min-gain-ns=lots").err().unwrap();
    assert_eq!(e.to_string(), "option `min-gain-ns` of `fuse-welch-peaks` takes a number, got `lots`");
}

/// Built without the `mlir` feature, the tests against MLIR itself are listed
/// as ignored, with the reason, under their own names.
#[cfg(not(feature = "mlir"))]
mod with_mlir {
    macro_rules! needs_the_mlir_feature {
        ($($name:ident),* $(,)?) => {$(
            #[test]
            #[ignore = "needs the `mlir` feature: cargo test -p rlx-welch-opt --features mlir (libmlir-22-dev)"]
            fn $name() {
                panic!("built without the `mlir` feature: cargo test -p rlx-welch-opt --features mlir (needs libmlir-22-dev)");
            }
        )*};
    }
    needs_the_mlir_feature!(
        mlir_parses_verifies_and_prints_what_rlx_opt_reads_back,
        the_mlir_pass_fuses_what_the_graph_pass_fuses,
        mlir_rejects_unverifiable_modules_with_its_own_message,
        a_failing_mlir_pass_fails_the_pipeline,
        both_fusing_passes_run_in_one_mlir_pipeline,
        a_failing_log_mel_pass_names_itself,
    );
}

#[cfg(feature = "mlir")]
mod with_mlir {
    use super::*;
    use melior::ir::Module;
    use melior::ir::operation::{OperationLike, OperationPrintingFlags};
    use melior::pass::PassManager;
    use rlx_opt::mlir_pass::melior_pass;

    #[test]
    fn mlir_parses_verifies_and_prints_what_rlx_opt_reads_back() {
        for (name, graph) in corpus_with_fusions() {
            let printed = rlx_opt::mlir_pass::print_module(std::slice::from_ref(&graph), "in.graph").unwrap_or_else(|d| panic!("{name}: {}", d.message));
            assert!(printed.contains("loc("), "{name}: MLIR printed no locations");
            let back = mlir::parse(&printed, 1).unwrap_or_else(|d| panic!("{name}: {}\n{printed}", d.render("mlir.mlir")));
            assert_same(&name, &graph, &back[0]);
        }
    }

    /// `module` as rlx-opt reads it back.
    fn graphs_of(module: &Module<'_>) -> Vec<Graph> {
        let flags = OperationPrintingFlags::new().enable_debug_info(true, false);
        mlir::parse(&module.as_operation().to_string_with_flags(flags).unwrap(), 1).unwrap()
    }

    #[test]
    fn the_mlir_pass_fuses_what_the_graph_pass_fuses() {
        let context = melior_pass::context();
        let mut fused = [0; MODULE_PASSES.len()];
        for (name, graph) in corpus() {
            for (i, info) in MODULE_PASSES.into_iter().enumerate() {
                for target in ["cpu", "cuda", "rocm"] {
                    let options = format!("target={target}");
                    let text = mlir::print(std::slice::from_ref(&graph));
                    let mut module = Module::parse(&context, &text).unwrap();
                    let pm = PassManager::new(&context);
                    // fuse-welch-peaks through the API it always had.
                    let pass = if info.name == ModuleFusion::NAME {
                        melior_pass::create_pass(&context, &options).unwrap()
                    } else {
                        melior_pass::create_pass_named(&context, info.name, &options).unwrap()
                    };
                    pm.add_pass(pass);
                    pm.run(&mut module).unwrap_or_else(|e| panic!("{name} {} {target}: {e}", info.name));
                    let via_mlir = graphs_of(&module);
                    let via_text = mlir::parse(&ModuleFusion::for_pass(info.name, &options).unwrap().run(&text).unwrap(), 1).unwrap();
                    assert_eq!(rlx_text::print(&via_mlir[0]), rlx_text::print(&via_text[0]), "{name} {} {target}", info.name);
                    assert_eq!(rlx_text::print(&via_mlir[0]), rlx_text::print(&fused_by(info, &options, &graph)), "{name} {} {target}", info.name);
                    fused[i] += usize::from(via_mlir[0] != graph);
                }
            }
        }
        assert!(fused.iter().all(|&n| n > 0), "a module pass fused nothing in the corpus: {fused:?}");
    }

    #[test]
    fn both_fusing_passes_run_in_one_mlir_pipeline() {
        let graphs: Vec<Graph> = corpus()
            .into_iter()
            .filter(|(n, _)| n.ends_with("welch_native.graph") || n.ends_with("log_mel_input_filters_n40.graph"))
            .map(|(_, g)| g)
            .collect();
        assert_eq!(graphs.len(), 2);
        let context = melior_pass::context();
        let mut module = Module::parse(&context, &mlir::print(&graphs)).unwrap();
        let pm = PassManager::new(&context);
        pm.add_pass(melior_pass::create_pass_named(&context, "fuse-log-mel", "target=cpu").unwrap());
        pm.add_pass(melior_pass::create_pass_named(&context, "fuse-welch-peaks", "target=cuda").unwrap());
        pm.run(&mut module).unwrap();
        let back = graphs_of(&module);
        let want = [fused_by(&fuse_log_mel::INFO, "target=cpu", &graphs[0]), fused_by(&fuse_log_mel::INFO, "target=cpu", &graphs[1])]
            .map(|g| fused_by(&fuse_welch_peaks::INFO, "target=cuda", &g));
        for (want, got) in want.iter().zip(&back) {
            assert_same(&want.name, want, got);
        }
        let text: String = back.iter().map(rlx_text::print).collect();
        assert!(text.contains("rlx_opt.log_mel") && text.contains("rlx_opt.welch_peaks") && !text.contains("LogMel(") && !text.contains("WelchPeaks"), "{text}");
        let e = melior_pass::create_pass_named(&context, "fuse-everything", "").err().unwrap();
        assert!(matches!(e, ModulePassError::UnknownPass { .. }), "{e}");
    }

    #[test]
    fn a_failing_log_mel_pass_names_itself() {
        let context = melior_pass::context();
        // Filters of 10 bins for a spectrum of 9: the graph verifier's error, at the op.
        let text = "func.func @f(%a: tensor<4x16xf32>, %w: tensor<3x10xf32>) -> tensor<4x3xf32> {\n  %0 = \"rlx.Binary\"(%a, %a) {rlx.value = \"Sub\"} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>\n  %1 = \"rlx.Concat\"(%a, %0) {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>\n  %2 = \"rlx.Fft\"(%1) {algo = \"Native\", inverse = false, norm = \"Backward\"} : (tensor<4x32xf32>) -> tensor<4x32xf32>\n  %3 = \"rlx.LogMel\"(%2, %w) : (tensor<4x32xf32>, tensor<3x10xf32>) -> tensor<4x3xf32>\n  return %3 : tensor<4x3xf32>\n}\n";
        let mut module = Module::parse(&context, text).unwrap();
        let messages = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let sink = messages.clone();
        let handler = context.attach_diagnostic_handler(move |d| {
            sink.borrow_mut().push(d.to_string());
            true
        });
        let pm = PassManager::new(&context);
        pm.add_pass(melior_pass::create_pass_named(&context, "fuse-log-mel", "target=cpu").unwrap());
        assert!(pm.run(&mut module).is_err());
        context.detach_diagnostic_handler(handler);
        let messages = messages.borrow();
        assert!(
            messages.iter().any(|m| m.starts_with("fuse-log-mel: ") && m.contains("filters have 10 bins but a spectrum of width 32 has 9")),
            "{messages:?}"
        );
        assert!(melior_pass::create_pass_named(&context, "fuse-log-mel", "target=nope").is_err());
    }

    #[test]
    fn mlir_rejects_unverifiable_modules_with_its_own_message() {
        let text = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<8xf32>\n}\n";
        let e = melior_pass::verify_text(text, 1).unwrap_err();
        assert_eq!(e.loc.map(|l| l.line), Some(2), "{e:?}");
        assert!(e.message.contains("MLIR:") && e.message.contains("type"), "{}", e.message);
    }

    #[test]
    fn a_failing_mlir_pass_fails_the_pipeline() {
        let context = melior_pass::context();
        let text = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = \"rlx.Narrow\"(%a) {axis = 9 : i64, start = 0 : i64, len = 4 : i64} : (tensor<4xf32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n";
        let mut module = Module::parse(&context, text).unwrap();
        let pm = PassManager::new(&context);
        pm.add_pass(melior_pass::create_pass(&context, "target=cuda").unwrap());
        assert!(pm.run(&mut module).is_err());
        assert!(melior_pass::create_pass(&context, "target=nope").is_err());
    }
}
