fn main() {
    // `args_os`: an argument that is not UTF-8 (a file name) must not panic,
    // as `std::env::args` does; clap takes it where a path is expected.
    // rlx-opt's driver, with RLX's Session as `--engine=rlx`.
    std::process::exit(rlx_opt::run_cli::main_with_engine(std::env::args_os(), &rlx_ext::SessionEngine));
}
