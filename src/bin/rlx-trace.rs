fn main() {
    std::process::exit(rlx_opt::trace_cli::main_with_args(std::env::args().collect()));
}
