fn main() {
    // The driver knows passes only through the registry it is handed.
    // `args_os`: an argument that is not UTF-8 (a file name) must not panic,
    // as `std::env::args` does; clap takes it where a path is expected.
    std::process::exit(rlx_opt::driver::main_with_os_args(std::env::args_os(), rlx_opt::passes::registry()));
}
