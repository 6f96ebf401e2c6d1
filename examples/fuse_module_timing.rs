fn main() {
    let text = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let fusion = rlx_opt::mlir_host::ModuleFusion::from_options("target=cpu").unwrap();
    for _ in 0..2 {
    let t = std::time::Instant::now();
    let out = fusion.run_edits(&text).unwrap();
    eprintln!("run_edits: {:.3}s ({} bytes)", t.elapsed().as_secs_f64(), out.map_or(0, |o| o.len()));
    }
    let t = std::time::Instant::now();
    let m = rlx_opt::format::mlir::syntax::parse(&text).unwrap();
    eprintln!("syntax only: {:.3}s", t.elapsed().as_secs_f64());
    let lines = rlx_opt::format::mlir::convert::Lines::new(&text, 1);
    let t = std::time::Instant::now();
    let func = &m.ops[0].regions[0][0].ops[0];
    let c = rlx_opt::format::mlir::convert::convert_function(&m, func, &lines).unwrap();
    eprintln!("convert: {:.3}s", t.elapsed().as_secs_f64());
    let t = std::time::Instant::now();
    rlx_opt::verify::verify(&c.graph).unwrap();
    eprintln!("verify: {:.3}s", t.elapsed().as_secs_f64());
    let t = std::time::Instant::now();
    let g2 = c.graph.clone();
    eprintln!("clone: {:.3}s {}", t.elapsed().as_secs_f64(), g2 == c.graph);
    let t = std::time::Instant::now();
    drop(m);
    eprintln!("drop: {:.3}s", t.elapsed().as_secs_f64());
}
