//! Interoperability with MPICH, when it is installed (each test is skipped otherwise):
//! Reflex's PMI client under Hydra's `mpiexec.hydra` (PMI_FD, `-pmi-port`, two emulated nodes),
//! and an MPICH-built program under Reflex's `mpiexec` (PMI server compatibility).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const MPIEXEC: &str = env!("CARGO_BIN_EXE_mpiexec");
const RANK: &str = env!("CARGO_BIN_EXE_pmi-test-rank");

/// The full path of `program` on PATH, if installed.
fn installed(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file());
    if found.is_none() {
        eprintln!("skipped: {program} is not installed");
    }
    found
}

fn output(command: &mut Command) -> Output {
    command.stdin(Stdio::null()).output().expect("run command")
}

fn sorted_lines(out: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(out)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort_unstable();
    lines
}

fn hydra(args: &[&str]) -> Option<Output> {
    let hydra = installed("mpiexec.hydra")?;
    Some(output(Command::new(hydra).args(args)))
}

#[test]
fn client_under_hydra_over_pmi_fd() {
    let Some(out) = hydra(&["-n", "3", RANK, "init", "exchange", "finalize"]) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<String> = (0..3)
        .map(|r| format!("rank {r} of 3 exchanged with every peer"))
        .collect();
    assert_eq!(sorted_lines(&out.stdout), want);
}

#[test]
fn client_under_hydra_over_pmi_port() {
    let Some(out) = hydra(&["-pmi-port", "-n", "2", RANK, "init", "exchange", "finalize"]) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sorted_lines(&out.stdout).len(), 2);
}

#[test]
fn client_reads_hydras_two_node_mapping() {
    let args = [
        "-launcher",
        "fork",
        "-hosts",
        "127.0.0.1:2,localhost:2",
        "-n",
        "4",
        RANK,
        "init",
        "@3:layout",
        "finalize",
    ];
    let Some(out) = hydra(&args) else { return };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mapping=Some([0, 0, 1, 1])"), "{text}");
}

#[test]
fn client_abort_under_hydra_sets_the_exit_code() {
    let Some(out) = hydra(&["-n", "2", RANK, "init", "@1:abort:7", "barrier"]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(7));
}

const HELLO: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0, got = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d/%d sum=%d got=%d\n", rank, size, sum, got);
    if (argc > 1 && rank == 1) MPI_Abort(MPI_COMM_WORLD, atoi(argv[1]));
    MPI_Finalize();
    return 0;
}
"#;

/// Builds the MPICH test program once per test binary run.
fn mpich_hello() -> Option<PathBuf> {
    let mpicc = installed("mpicc.mpich")?;
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    let (source, binary) = (dir.join("hello.c"), dir.join("hello_mpich"));
    std::fs::write(&source, HELLO).expect("write hello.c");
    let out = output(Command::new(mpicc).arg("-o").arg(&binary).arg(&source));
    assert!(
        out.status.success(),
        "mpicc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(binary)
}

#[test]
fn mpich_program_under_reflex_mpiexec() {
    let Some(hello) = mpich_hello() else { return };
    let out = output(Command::new(MPIEXEC).args(["-n", "4"]).arg(&hello));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<String> = (0..4)
        .map(|r| format!("rank {r}/4 sum=6 got={}", (r + 3) % 4))
        .collect();
    assert_eq!(sorted_lines(&out.stdout), want);

    let out = output(Command::new(MPIEXEC).args(["-n", "3"]).arg(&hello).arg("6"));
    assert_eq!(out.status.code(), Some(6));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mpiexec: rank 1 called MPI_Abort with code 6"),
        "{stderr}"
    );
}
