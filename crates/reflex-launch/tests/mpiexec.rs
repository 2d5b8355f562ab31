//! mpiexec launching real processes: `pmi-test-rank` (a scriptable rank, see its doc) under
//! `mpiexec`, checking exit statuses, output, stdin, signals, PMI and that no process survives.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const MPIEXEC: &str = env!("CARGO_BIN_EXE_mpiexec");
const RANK: &str = env!("CARGO_BIN_EXE_pmi-test-rank");
/// Only a guard against a hung test run, never a pass/fail criterion.
const HANG_GUARD: Duration = Duration::from_secs(120);

struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    fn code(&self) -> i32 {
        self.status.code().expect("mpiexec itself was killed")
    }

    /// Process ids printed by the `pid` and `orphan` steps.
    fn pids(&self) -> Vec<Pid> {
        self.stdout
            .lines()
            .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
                ["pid", _, pid] | ["orphan", pid] => pid.parse().ok().map(Pid::from_raw),
                _ => None,
            })
            .collect()
    }
}

fn mpiexec(args: &[&str]) -> Command {
    let mut command = Command::new(MPIEXEC);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Kills `child` if the test hangs; returns the guard's sender to disarm it.
fn guard(child: &Child) -> mpsc::Sender<()> {
    let (done, wait) = mpsc::channel::<()>();
    let pid = Pid::from_raw(child.id() as i32);
    std::thread::spawn(move || {
        if wait.recv_timeout(HANG_GUARD) == Err(mpsc::RecvTimeoutError::Timeout) {
            let _ = kill(pid, Signal::SIGKILL);
        }
    });
    done
}

fn finish(child: Child) -> Run {
    let done = guard(&child);
    let output = child.wait_with_output().expect("wait for mpiexec");
    let _ = done.send(());
    Run {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn run(args: &[&str]) -> Run {
    finish(mpiexec(args).spawn().expect("start mpiexec"))
}

/// `mpiexec <opts> pmi-test-rank <steps>`.
fn run_ranks(opts: &[&str], steps: &[&str]) -> Run {
    let mut args = opts.to_vec();
    args.push(RANK);
    args.extend_from_slice(steps);
    run(&args)
}

fn assert_all_gone(pids: &[Pid]) {
    assert!(!pids.is_empty(), "no pid was printed");
    for &pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} survived the job"
        );
    }
}

#[test]
fn ranks_exchange_through_pmi_and_exit_zero() {
    let run = run_ranks(&["-n", "8"], &["init", "exchange", "finalize"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    for rank in 0..8 {
        assert!(
            run.stdout
                .contains(&format!("rank {rank} of 8 exchanged with every peer\n")),
            "{}",
            run.stdout
        );
    }
    assert_eq!(run.stderr, "");
}

#[test]
fn the_first_failing_status_is_the_jobs() {
    let run = run_ranks(&["-n", "3"], &["pid", "@1:exit:5", "sleep"]);
    assert_eq!(run.code(), 5);
    let rank1_pid = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("pid 1 "))
        .unwrap();
    let want =
        format!("mpiexec: rank 1 (pid {rank1_pid}) exited with status 5; terminating the job\n");
    assert_eq!(run.stderr, want);
    assert_all_gone(&run.pids());
}

#[test]
fn a_job_past_mpiexec_timeout_is_ended_with_status_124() {
    let mut command = mpiexec(&["-n", "2", RANK, "pid", "sleep"]);
    command.env("MPIEXEC_TIMEOUT", "1");
    let started = std::time::Instant::now();
    let run = finish(command.spawn().expect("start mpiexec"));
    assert_eq!(run.code(), 124, "{}", run.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(
        run.stderr
            .contains("the job ran past its time limit of 1 s (MPIEXEC_TIMEOUT)"),
        "{}",
        run.stderr
    );
    assert_all_gone(&run.pids());
    let mut bad = mpiexec(&["-n", "1", RANK]);
    bad.env("MPIEXEC_TIMEOUT", "soon");
    let run = finish(bad.spawn().expect("start mpiexec"));
    assert_ne!(run.code(), 0);
    assert!(run
        .stderr
        .contains("MPIEXEC_TIMEOUT must be a whole number of seconds"));
}

#[test]
fn a_rank_killed_mid_run_takes_the_job_down() {
    let run = run_ranks(
        &["-n", "3"],
        &["pid", "init", "barrier", "@2:kill:9", "sleep"],
    );
    assert_eq!(run.code(), 128 + 9);
    let rank2_pid = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("pid 2 "))
        .unwrap();
    let want = format!(
        "mpiexec: rank 2 (pid {rank2_pid}) was killed by signal 9 (Killed); terminating the job\n"
    );
    assert_eq!(run.stderr, want);
    assert_all_gone(&run.pids());
}

#[test]
fn pmi_abort_kills_the_job_with_its_code() {
    let run = run_ranks(
        &["-n", "3"],
        &["pid", "init", "barrier", "@1:abort:3", "sleep"],
    );
    assert_eq!(run.code(), 3);
    assert_eq!(
        run.stderr,
        "mpiexec: rank 1 called MPI_Abort with code 3: test abort from rank 1\n"
    );
    assert_all_gone(&run.pids());
}

#[test]
fn ranks_that_ignore_sigterm_are_killed() {
    let run = run_ranks(
        &["-n", "2"],
        &[
            "pid",
            "ignore-term",
            "init",
            "barrier",
            "@0:exit:2",
            "sleep",
        ],
    );
    assert_eq!(run.code(), 2);
    assert_all_gone(&run.pids());
}

#[test]
fn double_forked_orphans_are_killed_after_a_clean_job() {
    let run = run_ranks(&["-n", "2"], &["pid", "@0:orphan", "print:done"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert!(run.stdout.contains("orphan "), "{}", run.stdout);
    assert_all_gone(&run.pids());
}

#[test]
fn double_forked_orphans_are_killed_after_a_failure() {
    let run = run_ranks(
        &["-n", "2"],
        &["pid", "init", "barrier", "@1:orphan", "@1:exit:4", "sleep"],
    );
    assert_eq!(run.code(), 4);
    assert_eq!(run.pids().len(), 3, "{}", run.stdout);
    assert_all_gone(&run.pids());
}

#[test]
fn labels_prefix_every_line_and_keep_partial_lines() {
    let run = run_ranks(
        &["-n", "2", "-l"],
        &["print:hello", "eprint:oops", "partial:tail"],
    );
    assert_eq!(run.code(), 0);
    let mut out: Vec<&str> = run.stdout.lines().collect();
    out.sort_unstable();
    assert_eq!(out, ["[0] hello", "[0] tail", "[1] hello", "[1] tail"]);
    let mut err: Vec<&str> = run.stderr.lines().collect();
    err.sort_unstable();
    assert_eq!(err, ["[0] oops", "[1] oops"]);
}

#[test]
fn output_without_labels_is_passed_through() {
    let run = run_ranks(&["-n", "1"], &["partial:no-newline"]);
    assert_eq!(run.stdout, "no-newline");
}

#[test]
fn stdin_goes_to_rank_zero_only() {
    let mut child = mpiexec(&["-n", "3", "-l", RANK, "cat"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"first\nsecond\n").unwrap();
    drop(stdin);
    let run = finish(child);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, "[0] first\n[0] second\n");
}

#[test]
fn large_stdin_is_forwarded_completely() {
    let input: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    let mut child = mpiexec(&["-n", "2", RANK, "cat"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).map(|_| input));
    let run = finish(child);
    let input = writer.join().unwrap().unwrap();
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout, input);
}

#[test]
fn sigterm_is_forwarded_to_the_ranks() {
    let mut child = mpiexec(&["-n", "2", RANK, "pid", "ready", "sleep"])
        .spawn()
        .unwrap();
    let done = guard(&child);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while seen.matches("ready").count() < 2 {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "mpiexec ended early: {seen}"
        );
        seen.push_str(&line);
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    stdout.read_to_string(&mut seen).unwrap();
    let status = child.wait().unwrap();
    let _ = done.send(());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(128 + 15), "{stderr}");
    assert!(
        stderr.contains("was killed by signal 15 (Terminated); terminating the job"),
        "{stderr}"
    );
    let run = Run {
        status,
        stdout: seen,
        stderr,
    };
    assert_all_gone(&run.pids());
}

#[test]
fn ctrl_z_stops_every_rank_and_sigcont_resumes_the_job() {
    let go = std::env::temp_dir().join(format!("reflex-ctrl-z-{}", std::process::id()));
    let steps = common::waiting_rank(&go);
    let mut args = vec!["-n", "3", RANK];
    args.extend(steps.iter().map(String::as_str));
    common::check_stop_and_continue(mpiexec(&args), 3, &go);
}

#[test]
fn a_rank_leaving_without_finalize_breaks_the_barrier_clearly() {
    let run = run_ranks(&["-n", "2"], &["init", "@1:exit:0", "barrier", "finalize"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr
            .contains("wait in a pmi barrier that rank 1 can no longer reach"),
        "{}",
        run.stderr
    );
}

#[test]
fn wdir_sets_the_working_directory() {
    let dir = std::env::temp_dir().canonicalize().unwrap();
    let run = run_ranks(&["-n", "1", "-wdir", dir.to_str().unwrap()], &["pwd"]);
    assert_eq!(run.stdout, format!("pwd {}\n", dir.display()));
    let run = run_ranks(&["-wdir", "/no/such/dir"], &["pwd"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr
            .starts_with("mpiexec: cannot use working directory /no/such/dir: "),
        "{}",
        run.stderr
    );
}

#[test]
fn env_options_reach_the_ranks() {
    let run = run_ranks(
        &["-n", "2", "-env", "FOO", "bar baz", "-genv", "QUX", "1"],
        &[
            "@1:env:FOO",
            "@1:env:QUX",
            "@1:env:PMI_SIZE",
            "@1:env:MPI_LOCALRANKID",
            "@1:env:MPI_LOCALNRANKS",
        ],
    );
    assert_eq!(
        run.stdout,
        "FOO=bar baz\nQUX=1\nPMI_SIZE=2\nMPI_LOCALRANKID=1\nMPI_LOCALNRANKS=2\n"
    );
    let mut command = mpiexec(&["-genvlist", "KEEP_ME", RANK, "env:KEEP_ME", "env:DROP_ME"]);
    let run = finish(
        command
            .env("KEEP_ME", "1")
            .env("DROP_ME", "2")
            .spawn()
            .unwrap(),
    );
    assert_eq!(run.stdout, "KEEP_ME=1\nDROP_ME=\n");
    // An outer launcher's variables (mpiexec itself run by srun or mpirun) stay outside.
    let mut command = mpiexec(&[RANK, "env:PMIX_NAMESPACE", "env:PMI_PORT", "env:OTHER"]);
    let run = finish(
        command
            .env("PMIX_NAMESPACE", "slurm.pmix.7.0")
            .env("PMI_PORT", "host:1")
            .env("OTHER", "kept")
            .spawn()
            .unwrap(),
    );
    assert_eq!(run.stdout, "PMIX_NAMESPACE=\nPMI_PORT=\nOTHER=kept\n");
}

#[test]
fn start_and_usage_errors() {
    let missing = run(&["-n", "2", "/no/such/program"]);
    assert_eq!(missing.code(), 127);
    assert!(
        missing
            .stderr
            .contains("cannot start rank 0 (\"/no/such/program\"): No such file"),
        "{}",
        missing.stderr
    );
    let launcher = run(&["-launcher", "ssh", "x"]);
    assert_eq!(launcher.code(), 2);
    assert_eq!(
        launcher.stderr,
        "mpiexec: option -launcher is not supported by this single-host mpiexec\n"
    );
    // A host without a reachable reflexd: one clear line, status 1.
    let nobody = run(&[
        "-hosts",
        "127.0.0.1",
        "-reflexd-port",
        "1",
        "-certs",
        "/nonexistent",
        "x",
    ]);
    assert_eq!(nobody.code(), 1);
    assert!(
        nobody
            .stderr
            .starts_with("mpiexec: cannot read /nonexistent/ca.pem"),
        "{}",
        nobody.stderr
    );
    let help = run(&["--help"]);
    assert_eq!(help.code(), 0);
    assert!(help.stdout.starts_with("usage: mpiexec"));
}

#[test]
fn non_pmi_programs_run_too() {
    let shell = run(&["-n", "2", "sh", "-c", "echo $PMI_RANK/$PMI_SIZE"]);
    assert_eq!(shell.code(), 0);
    let mut lines: Vec<&str> = shell.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["0/2", "1/2"]);
}

#[test]
fn reflex_settings_are_checked_once_before_launch() {
    let mut command = mpiexec(&["-n", "2", RANK, "print:ran"]);
    let bad = finish(command.env("REFLEX_LOG", "loud").spawn().unwrap());
    assert_eq!(bad.code(), 1);
    assert_eq!(
        bad.stderr,
        "mpiexec: invalid REFLEX_LOG=\"loud\": expected one of error|warn|info|debug\n"
    );
    assert_eq!(bad.stdout, "");
    let typo = run_ranks(
        &["-n", "2", "-env", "REFLEX_EAGER_LIMT", "1"],
        &["print:ran"],
    );
    assert_eq!(typo.code(), 0);
    assert_eq!(
        typo.stderr,
        "mpiexec: warning: unknown setting REFLEX_EAGER_LIMT ignored (closest valid name: REFLEX_EAGER_LIMIT)\n"
    );
    assert_eq!(typo.stdout, "ran\nran\n");
}

#[test]
fn shared_memory_files_are_removed_whatever_happened() {
    for steps in [
        &["shm", "print:ok"][..],
        &["shm", "init", "barrier", "@1:kill:9", "sleep"][..],
    ] {
        let run = run_ranks(&["-n", "2"], steps);
        let files: Vec<&str> = run
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("shm "))
            .collect();
        assert_eq!(files.len(), 2, "{}{}", run.stdout, run.stderr);
        for file in files {
            assert!(
                !std::path::Path::new(file).exists(),
                "{file} survived the job"
            );
        }
    }
}

/// Lines of `run`'s stdout starting with `prefix`, sorted (the jobs' output interleaves).
fn lines_with(run: &Run, prefix: &str) -> Vec<String> {
    let mut lines: Vec<String> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// `pmi-test-rank` steps: `parent` steps, then `--` and the spawned job's steps.
fn with_children<'a>(parent: &[&'a str], children: &[&'a str]) -> Vec<&'a str> {
    let mut steps = parent.to_vec();
    steps.push("--");
    steps.extend_from_slice(children);
    steps
}

#[test]
fn spawn_starts_a_job_with_its_own_ranks_appnums_and_preput_keys() {
    let steps = with_children(
        &["init", "@0:spawn:2+1", "barrier", "finalize"],
        &["init", "parent", "exchange", "shm", "finalize"],
    );
    let run = run_ranks(&["-l", "-n", "2", "-usize", "8"], &steps);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    assert_eq!(
        lines_with(&run, "[0]"),
        ["[0] spawned rc=0 errcodes=0,0,0 msg="]
    );
    let want = [
        "[1:0] parent 0 spawned=true port=port-of-0 appnum=Some(0) size=3 universe=Some(8)",
        "[1:0] rank 0 of 3 exchanged with every peer",
        "[1:1] parent 1 spawned=true port=port-of-0 appnum=Some(0) size=3 universe=Some(8)",
        "[1:1] rank 1 of 3 exchanged with every peer",
        "[1:2] parent 2 spawned=true port=port-of-0 appnum=Some(1) size=3 universe=Some(8)",
        "[1:2] rank 2 of 3 exchanged with every peer",
    ];
    let got: Vec<String> = lines_with(&run, "[1:")
        .into_iter()
        .filter(|l| !l.contains("] shm "))
        .collect();
    assert_eq!(got, want);
    let files: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.split_once("] shm ").map(|(_, f)| f))
        .collect();
    assert_eq!(files.len(), 3, "{}", run.stdout);
    for file in files {
        assert!(
            !std::path::Path::new(file).exists(),
            "{file} survived the job"
        );
    }
}

#[test]
fn spawned_jobs_spawn_too_and_honour_wdir_and_env() {
    let dir = std::env::temp_dir().canonicalize().unwrap();
    let info = format!("spawn:1:wdir={},env=SPAWN_A=1 SPAWN_B=x=y", dir.display());
    let steps = with_children(
        &["init", &info, "finalize"],
        &[
            "init",
            "pwd",
            "env:SPAWN_A",
            "env:SPAWN_B",
            "spawn:1",
            "finalize",
            "--",
            "init",
            "parent",
        ],
    );
    let run = run_ranks(&["-l", "-n", "1"], &steps);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let want = [
        "[1:0] SPAWN_A=1".to_owned(),
        "[1:0] SPAWN_B=x=y".to_owned(),
        format!("[1:0] pwd {}", dir.display()),
        "[1:0] spawned rc=0 errcodes=0 msg=".to_owned(),
        "[2:0] parent 0 spawned=true port=port-of-0 appnum=Some(0) size=1 universe=Some(1)"
            .to_owned(),
    ];
    let mut got = lines_with(&run, "[1:");
    got.extend(lines_with(&run, "[2:"));
    assert_eq!(got, want);
}

#[test]
fn spawning_a_missing_program_gives_error_codes_and_starts_nothing() {
    let run = run_ranks(
        &["-n", "1"],
        &[
            "init",
            "spawn-prog:/no/such/program:2",
            "spawn-prog:no-such-program-xyz:1",
            "finalize",
        ],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert!(
        lines[0].starts_with("spawned rc=-1 errcodes=42,42 msg=spawn_command_0_"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("/no/such/program:_No_such_file_or_directory"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("errcodes=42 msg="), "{}", lines[1]);
    assert!(
        lines[1].contains("not_found_in_the_path_info_key_or_PATH"),
        "{}",
        lines[1]
    );
}

#[test]
fn a_spawned_rank_that_fails_ends_every_job() {
    let go = std::env::temp_dir().join(format!("reflex-spawn-go-{}", std::process::id()));
    let _ = std::fs::remove_file(&go);
    // The children wait until rank 0 has printed the spawn's answer.
    let touch = format!("@0:touch:{}", go.display());
    let wait = format!("wait-file:{}", go.display());
    let steps = with_children(
        &["pid", "init", "barrier", "@0:spawn:2", &touch, "sleep"],
        &[&wait, "pid", "@1:exit:5", "sleep"],
    );
    let run = run_ranks(&["-n", "2"], &steps);
    let _ = std::fs::remove_file(&go);
    assert_eq!(run.code(), 5, "{}", run.stderr);
    assert!(
        run.stdout.contains("spawned rc=0 errcodes=0,0"),
        "{}",
        run.stdout
    );
    // Rank 1 of each job printed `pid 1 P`: the message names the spawned one.
    let named = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("pid 1 "))
        .filter(|pid| {
            run.stderr == format!(
                "mpiexec: rank 1 of spawned job 1 (pid {pid}) exited with status 5; terminating the job\n"
            )
        })
        .count();
    assert_eq!(named, 1, "{}{}", run.stdout, run.stderr);
    assert_all_gone(&run.pids());
}

#[test]
fn a_spawned_rank_that_aborts_ends_every_job_with_its_code() {
    let steps = with_children(
        &["pid", "init", "spawn:1", "sleep"],
        &["pid", "init", "abort:4"],
    );
    let run = run_ranks(&["-n", "1"], &steps);
    assert_eq!(run.code(), 4, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "mpiexec: rank 0 of spawned job 1 called MPI_Abort with code 4: test abort from rank 0\n"
    );
    assert_all_gone(&run.pids());
}

#[test]
fn mpiexec_waits_for_spawned_jobs_after_the_first_one_ends() {
    let steps = with_children(
        &["init", "spawn:1", "finalize", "print:parent-done"],
        &["init", "barrier", "print:child-done"],
    );
    let run = run_ranks(&["-n", "1"], &steps);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert!(run.stdout.contains("parent-done\n"), "{}", run.stdout);
    assert!(run.stdout.contains("child-done\n"), "{}", run.stdout);
}
