//! Shared by the launcher tests (`mpiexec.rs`, `remote.rs`): the Ctrl-Z check. SIGTSTP to
//! mpiexec must leave every rank and mpiexec itself stopped (state `T` in `/proc`), and SIGCONT
//! must let the job finish normally. The ranks wait for a file that is created while they are
//! stopped, so they can only finish after the SIGCONT. (They are `pmi-test-rank`s, not shell
//! loops: a shell that forks `sleep` can be caught by SIGSTOP inside `vfork`, in state `D`.)

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Only a guard against a hung test run, never a pass/fail criterion.
const STATE_GUARD: Duration = Duration::from_secs(60);

/// The steps of a `pmi-test-rank` that prints `pid RANK PID`, waits for file `go`, and
/// prints `waited RANK`.
pub fn waiting_rank(go: &Path) -> [String; 2] {
    ["pid".into(), format!("wait-file:{}", go.display())]
}

/// The state letter of process `pid` (`R`, `S`, `T`, ...), `None` once it is gone.
pub fn process_state(pid: Pid) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// Waits until every process of `pids` is in state `want`.
fn wait_for_state(pids: &[Pid], want: char) {
    let start = Instant::now();
    while !pids.iter().all(|&p| process_state(p) == Some(want)) {
        let states: Vec<_> = pids.iter().map(|&p| (p, process_state(p))).collect();
        assert!(
            start.elapsed() < STATE_GUARD,
            "not all in state {want}: {states:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `mpiexec` (whose ranks run [`waiting_rank`]`(go)`) through Ctrl-Z and `fg`: SIGTSTP,
/// every rank and mpiexec stopped, `go` created (nothing may move), SIGCONT, the job
/// ends with status 0 and every rank's `waited` line.
pub fn check_stop_and_continue(mut mpiexec: Command, ranks: u32, go: &Path) {
    let _ = std::fs::remove_file(go);
    let mut child = mpiexec
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mpiexec");
    let me = Pid::from_raw(child.id() as i32);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let mut pids = Vec::new();
    while pids.len() < ranks as usize {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "mpiexec ended early: {seen}"
        );
        if let ["pid", _, pid] = line.split_whitespace().collect::<Vec<_>>()[..] {
            pids.push(Pid::from_raw(pid.parse().unwrap()));
        }
        seen.push_str(&line);
    }
    kill(me, Signal::SIGTSTP).unwrap();
    pids.push(me);
    wait_for_state(&pids, 'T');
    std::fs::write(go, b"").unwrap();
    for &pid in &pids {
        assert_eq!(
            process_state(pid),
            Some('T'),
            "process {pid} ran on while stopped"
        );
    }
    kill(me, Signal::SIGCONT).unwrap();
    stdout.read_to_string(&mut seen).unwrap();
    let output = child.wait_with_output().unwrap(); // stdout was taken: stderr only
    let stderr = String::from_utf8_lossy(&output.stderr);
    let _ = std::fs::remove_file(go);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    for rank in 0..ranks {
        assert!(seen.contains(&format!("waited {rank}\n")), "{seen}");
    }
    assert_eq!(stderr, "");
    for &pid in &pids {
        assert_eq!(process_state(pid), None, "process {pid} survived the job");
    }
}
