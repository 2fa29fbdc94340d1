fn main() -> std::process::ExitCode {
    fsbench::cli::main()
}
