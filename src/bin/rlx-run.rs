fn main() {
    std::process::exit(rlx_opt::run_cli::main_with_args(std::env::args().collect()));
}
