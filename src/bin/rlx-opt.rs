fn main() {
    std::process::exit(rlx_opt::driver::main_with_args(std::env::args().collect()));
}
