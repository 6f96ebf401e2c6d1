//! Print a graph of N independent RLX Welch-peaks chains (5 nodes each).
//!
//! `cargo run --release --example gen_welch_chains -- 200000 > big.graph`
//! makes the 1,000,000-node graph the benchmarks use.

fn main() {
    let chains = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    print!("{}", rlx_opt::testgen::welch_chains(chains, 16, 256, 8, 8));
}
