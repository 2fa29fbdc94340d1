fn main() -> std::process::ExitCode {
    fsbench::main()
}
