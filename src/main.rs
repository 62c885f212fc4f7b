//! `kubectl-krply`: see the library for everything.

fn main() -> std::process::ExitCode {
    krply::cli::main()
}

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
