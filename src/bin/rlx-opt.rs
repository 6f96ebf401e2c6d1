fn main() {
    // The driver knows passes only through the registry it is handed.
    std::process::exit(rlx_opt::driver::main_with_args(std::env::args().collect(), rlx_opt::passes::registry()));
}
