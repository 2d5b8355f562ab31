//! `mpiexec`: runs an MPI job on this host (see `mpiexec --help` and the crate README).

fn main() {
    std::process::exit(reflex_launch::mpiexec_main(std::env::args_os().skip(1)));
}
