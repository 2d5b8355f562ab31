//! `mpiexec -hosts` against a real `reflexd` on loopback, without root or namespaces: the
//! daemon runs in a child process (this test binary re-run as `daemon_process`), with
//! certificates from a fresh CA; `127.0.0.1` and `localhost` are two "hosts" (two sessions,
//! two nodes). Checks PMI relayed across hosts with the node layout, a spawn through the daemon,
//! exit codes, a killed rank, stdin, and refused certificates. The namespace tests in `tests/hosts/` cover the rest.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use reflexd::ca::{save_issued, Authority};

const MPIEXEC: &str = env!("CARGO_BIN_EXE_mpiexec");
const RANK: &str = env!("CARGO_BIN_EXE_pmi-test-rank");
const SESSION: &str = env!("CARGO_BIN_EXE_reflex-session");

/// A daemon on 127.0.0.1 and the credentials to use it.
struct Cluster {
    daemon: Child,
    port: u16,
    dir: PathBuf,
}

impl Cluster {
    fn start(tag: &str) -> Cluster {
        let dir = std::env::temp_dir().join(format!("reflex-remote-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ca = Authority::create("Reflex remote test CA").unwrap();
        let host = ca
            .issue_host(&["127.0.0.1".into(), "localhost".into()])
            .unwrap();
        save_issued(&dir.join("host"), "host", &host, &ca.cert_pem()).unwrap();
        let me = nix::unistd::User::from_uid(nix::unistd::getuid())
            .unwrap()
            .unwrap()
            .name;
        let user = ca.issue_user(&me).unwrap();
        save_issued(&dir.join("user"), "user", &user, &ca.cert_pem()).unwrap();
        let rogue = Authority::create("Rogue").unwrap();
        let stranger = rogue.issue_user(&me).unwrap();
        save_issued(&dir.join("rogue"), "user", &stranger, &ca.cert_pem()).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut daemon = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "daemon_process", "--nocapture"])
            .env("REFLEXD_TEST_LISTEN", format!("127.0.0.1:{port}"))
            .env("REFLEXD_TEST_CERTS", dir.join("host"))
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(daemon.stderr.take().unwrap()).lines();
        let ready = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.contains("listening"));
        assert!(ready, "reflexd did not start");
        std::thread::spawn(move || lines.for_each(drop)); // keep its stderr drained
        Cluster { daemon, port, dir }
    }

    fn mpiexec(&self, certs: &str, hosts: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(MPIEXEC);
        cmd.arg("-certs")
            .arg(self.dir.join(certs))
            .args(["-reflexd-port", &self.port.to_string(), "-hosts", hosts])
            .args(args)
            .stdin(Stdio::null());
        cmd
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let pid = self.daemon.id();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.daemon.wait();
        // The daemon runs on a test-harness thread, and the harness's other threads do not
        // block SIGTERM, so the signal may end the process before the daemon's own shutdown:
        // remove its job groups here (the real reflexd is single-threaded).
        if let Some(base) = reflexd::cleanup::cgroup2_mount() {
            let base = base.join(reflexd::cleanup::CGROUP_DIR);
            let prefix = format!("reflexd-{pid}-");
            for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = reflexd::cleanup::JobGroup::at(&entry.path()).kill_and_remove();
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Not a test: the daemon, when this binary is re-run by [`Cluster::start`].
#[test]
fn daemon_process() {
    let Ok(listen) = std::env::var("REFLEXD_TEST_LISTEN") else {
        return;
    };
    let config = reflexd::daemon::DaemonConfig {
        listen,
        certs: std::env::var("REFLEXD_TEST_CERTS").unwrap().into(),
        session: SESSION.into(),
    };
    let status = match reflexd::daemon::run(&config, None) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("reflexd: {e}");
            1
        }
    };
    std::process::exit(status);
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn run(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

#[test]
fn pmi_across_two_hosts_with_their_layout() {
    let c = Cluster::start("pmi");
    let out = run(c.mpiexec(
        "user",
        "127.0.0.1:2,localhost:2",
        &[
            "-n", "4", "-l", RANK, "init", "layout", "exchange", "finalize",
        ],
    ));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for rank in 0..4 {
        let line = format!("[{rank}] layout {rank} kvsname=");
        assert!(stdout.contains(&line), "{stdout}");
    }
    assert!(stdout.contains("mapping=Some([0, 0, 1, 1])"), "{stdout}");

    // A spawn runs through the daemons too (here the one host's), and the job waits for it.
    let args = [
        "-n",
        "1",
        RANK,
        "init",
        "spawn:2",
        "finalize",
        "--",
        "print:child",
    ];
    let out = run(c.mpiexec("user", "127.0.0.1", &args));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["child", "child", "spawned rc=0 errcodes=0,0 msg="]);
}

#[test]
fn exit_codes_killed_ranks_and_stdin() {
    let c = Cluster::start("exit");
    let out = run(c.mpiexec(
        "user",
        "127.0.0.1,localhost",
        &["-n", "2", RANK, "@1:exit:5", "sleep"],
    ));
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("rank 1 (on localhost) exited with status 5"));
    let out = run(c.mpiexec(
        "user",
        "127.0.0.1,localhost",
        &["-n", "2", RANK, "@0:kill:9", "sleep"],
    ));
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    let mut child = c
        .mpiexec("user", "127.0.0.1", &["-n", "1", RANK, "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"through the daemon\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "through the daemon\n");
}

#[test]
fn refuses_certificates_of_another_ca() {
    let c = Cluster::start("rogue");
    let out = run(c.mpiexec("rogue", "127.0.0.1", &["-n", "1", RANK, "print:no"]));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("lost host 127.0.0.1"), "{stderr}");
    assert!(!text(&out.stdout).contains("no"));
}

#[test]
fn ctrl_z_stops_the_ranks_on_every_host_and_sigcont_resumes_them() {
    let c = Cluster::start("stop");
    let go = c.dir.join("go");
    let steps = common::waiting_rank(&go);
    let mut args = vec!["-n", "2", RANK];
    args.extend(steps.iter().map(String::as_str));
    let cmd = c.mpiexec("user", "127.0.0.1,localhost", &args);
    common::check_stop_and_continue(cmd, 2, &go);
}
