//! Interoperability with MPICH, when it is installed (each test is skipped otherwise):
//! Reflex's PMI client under Hydra's `mpiexec.hydra` (PMI_FD, `-pmi-port`, two emulated nodes,
//! `mcmd=spawn`), and MPICH-built programs under Reflex's `mpiexec` (PMI server compatibility,
//! `MPI_Comm_spawn` wherever this MPICH can spawn under Hydra).

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

#[test]
fn client_spawns_under_hydra() {
    let steps = [
        "-n",
        "2",
        RANK,
        "init",
        "@0:spawn:2+1:wdir=/tmp",
        "barrier",
        "finalize",
        "--",
        "init",
        "parent",
        "pwd",
        "exchange",
        "finalize",
    ];
    let Some(out) = hydra(&steps) else { return };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut want = vec!["spawned rc=0 errcodes=0,0,0 msg=".to_owned()];
    for (rank, appnum) in [(0, 0), (1, 0), (2, 1)] {
        want.push(format!(
            "parent {rank} spawned=true port=port-of-0 appnum=Some({appnum}) size=3 universe=None"
        ));
        want.push("pwd /tmp".to_owned());
        want.push(format!("rank {rank} of 3 exchanged with every peer"));
    }
    want.sort_unstable();
    assert_eq!(sorted_lines(&out.stdout), want);
}

const SPAWN: &str = r#"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Comm parent, inter;
    int rank, size, v, sum = 0, remote, i, errs[8];
    char *child_argv[] = {"child", NULL};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        MPI_Comm_spawn(argv[0], child_argv, 3, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs);
        MPI_Comm_remote_size(inter, &remote);
        if (rank == 0) {
            for (i = 0; i < remote; i++) {
                MPI_Recv(&v, 1, MPI_INT, i, 0, inter, MPI_STATUS_IGNORE);
                sum += v;
            }
            printf("parent: %d children, errcode %d, sum %d\n", remote, errs[0], sum);
        }
        MPI_Comm_disconnect(&inter);
    } else {
        v = 10 + rank;
        MPI_Send(&v, 1, MPI_INT, 0, 0, parent);
        printf("child %d/%d %s\n", rank, size, argv[1]);
        MPI_Comm_disconnect(&parent);
    }
    MPI_Finalize();
    return 0;
}
"#;

/// An MPICH program that spawns 3 children and hears from each, when this MPICH can spawn at
/// all: Debian's MPICH 4.0.2 (`ch4:ucx`) cannot open a port in some sandboxes, under Hydra too.
#[test]
fn mpich_spawn_under_reflex_mpiexec() {
    let Some(mpicc) = installed("mpicc.mpich") else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("spawn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    let (source, binary) = (dir.join("spawn.c"), dir.join("spawn_mpich"));
    std::fs::write(&source, SPAWN).expect("write spawn.c");
    let out = output(Command::new(mpicc).arg("-o").arg(&binary).arg(&source));
    assert!(out.status.success(), "mpicc failed");
    let binary = binary.to_str().expect("utf-8 path");
    let Some(hydra) = installed("mpiexec.hydra") else {
        return;
    };
    // MPICH's own library in both runs, whatever the caller's LD_LIBRARY_PATH says.
    let under_hydra = output(
        Command::new(hydra)
            .args(["-n", "2", binary])
            .env("LD_LIBRARY_PATH", ""),
    );
    if !under_hydra.status.success() {
        eprintln!(
            "skipped: this MPICH cannot spawn under Hydra either: {}",
            String::from_utf8_lossy(&under_hydra.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return;
    }
    let out = output(
        Command::new(MPIEXEC)
            .args(["-n", "2", binary])
            .env("LD_LIBRARY_PATH", ""),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sorted_lines(&out.stdout), sorted_lines(&under_hydra.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("parent: 3 children, errcode 0, sum 33"));
}
