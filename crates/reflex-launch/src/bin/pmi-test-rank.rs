//! `pmi-test-rank`: a scriptable rank for mpiexec's integration tests (not an end-user tool).
//!
//! Arguments are steps run in order; `@R:step` runs only on rank R (from `PMI_RANK`/`PMI_ID`).
//! - PMI: `init`, `layout` (prints kvsname and node mapping), `exchange` (puts a small and a
//!   large value, fences, checks every peer's), `barrier`, `finalize`, `abort:CODE` (then waits
//!   to be killed);
//! - output: `print:TEXT`, `eprint:TEXT`, `partial:TEXT` (no newline), `cat` (stdin to stdout),
//!   `pid`, `ready`, `env:NAME`, `pwd`;
//! - endings: `exit:CODE`, `kill:SIGNAL` (itself), `sleep` (until killed), `ignore-term`
//!   (blocks SIGTERM so only SIGKILL works);
//! - `wait-file:PATH`: waits (polling, without child processes) until PATH exists, then prints
//!   `waited RANK` (job-control tests: a forking shell loop can be caught in `vfork`, state D);
//!   `touch:PATH` creates PATH;
//! - leftovers: `shm` (creates this rank's shared-memory segment file and prints its path),
//!   `orphan` (double-forks a sleeping grandchild in its own process group, prints its pid);
//! - spawn: `spawn:N[+M..][:KEY=VAL,..]` starts one command per count running this program with
//!   the steps after `--` (which the spawning rank skips), info pairs for every command, and
//!   preput `PARENT_ROOT_PORT_NAME=port-of-R`; prints `spawned rc=.. errcodes=..`.
//!   `spawn-prog:PROGRAM:N` does the same for another program (`A|B:N`: one command of N
//!   processes per program, each with the steps after `--`); `parent` prints
//!   `parent R spawned=.. port=.. appnum=.. size=.. universe=..` (the preput key, if any).

#![forbid(unsafe_code)]

use std::io::{self, Read, Write};
use std::process::{Command, Stdio};

use nix::sys::signal::{kill, SigSet, Signal};
use nix::unistd::getpid;
use reflex_pmi::{PmiClient, SpawnCommand};
use std::os::unix::process::CommandExt;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("spawn-sleeper") {
        if let Err(e) = spawn_sleeper() {
            eprintln!("pmi-test-rank: cannot start the sleeper: {e}");
            std::process::exit(99);
        }
        return;
    }
    // PMI_RANK under mpiexec, Hydra and Slurm; PMI_ID under Hydra -pmi-port.
    let rank: u32 = ["PMI_RANK", "PMI_ID"]
        .iter()
        .find_map(|var| std::env::var(var).ok()?.parse().ok())
        .unwrap_or(0);
    let mut client: Option<PmiClient> = None;
    for arg in args.iter().take_while(|a| *a != "--") {
        let step = match arg.strip_prefix('@').and_then(|s| s.split_once(':')) {
            Some((only, step)) if only.parse() == Ok(rank) => step,
            Some(_) => continue,
            None => arg,
        };
        if let Err(e) = run_step(step, rank, &mut client, &args) {
            eprintln!("pmi-test-rank {rank}: step {step:?} failed: {e}");
            std::process::exit(99);
        }
    }
}

fn run_step(
    step: &str,
    rank: u32,
    client: &mut Option<PmiClient>,
    args: &[String],
) -> Result<(), String> {
    let (name, arg) = step.split_once(':').unwrap_or((step, ""));
    let mut out = io::stdout().lock();
    match name {
        "init" => *client = Some(PmiClient::from_env().map_err(|e| e.to_string())?),
        "exchange" => exchange(pmi(client)?)?,
        "layout" => {
            let c = pmi(client)?;
            let line = format!(
                "layout {rank} kvsname={} mapping={:?}",
                c.kvsname(),
                c.process_mapping()
            );
            writeln!(out, "{line}").map_err(|e| e.to_string())?;
        }
        "barrier" => pmi(client)?.barrier().map_err(|e| e.to_string())?,
        "finalize" => pmi(client)?.finalize().map_err(|e| e.to_string())?,
        "abort" => {
            let code = arg.parse().map_err(|_| format!("bad code {arg:?}"))?;
            pmi(client)?
                .abort(code, &format!("test abort from rank {rank}"))
                .map_err(|e| e.to_string())?;
            sleep_forever();
        }
        "print" => writeln!(out, "{arg}").map_err(|e| e.to_string())?,
        "eprint" => eprintln!("{arg}"),
        "partial" => write!(out, "{arg}").map_err(|e| e.to_string())?,
        "cat" => {
            let mut input = Vec::new();
            io::stdin()
                .read_to_end(&mut input)
                .map_err(|e| e.to_string())?;
            out.write_all(&input).map_err(|e| e.to_string())?;
        }
        "pid" => writeln!(out, "pid {rank} {}", std::process::id()).map_err(|e| e.to_string())?,
        "ready" => writeln!(out, "ready {rank}").map_err(|e| e.to_string())?,
        "env" => writeln!(out, "{arg}={}", std::env::var(arg).unwrap_or_default())
            .map_err(|e| e.to_string())?,
        "pwd" => {
            let dir = std::env::current_dir().map_err(|e| e.to_string())?;
            writeln!(out, "pwd {}", dir.display()).map_err(|e| e.to_string())?;
        }
        "exit" => {
            out.flush().map_err(|e| e.to_string())?;
            std::process::exit(arg.parse().map_err(|_| format!("bad code {arg:?}"))?);
        }
        "kill" => {
            let signal = arg
                .parse::<i32>()
                .ok()
                .and_then(|s| Signal::try_from(s).ok())
                .ok_or("bad signal")?;
            out.flush().map_err(|e| e.to_string())?;
            kill(getpid(), signal).map_err(|e| e.to_string())?;
            sleep_forever();
        }
        "ignore-term" => SigSet::from(Signal::SIGTERM)
            .thread_block()
            .map_err(|e| e.to_string())?,
        "orphan" => orphan()?,
        "shm" => {
            let job = std::env::var("PMI_JOBID").map_err(|e| e.to_string())?;
            let name = reflex_base::segment::segment_name(&job, rank as usize);
            let path = std::path::Path::new(reflex_base::segment::SHM_DIR).join(name);
            std::fs::write(&path, b"segment").map_err(|e| format!("{}: {e}", path.display()))?;
            writeln!(out, "shm {}", path.display()).map_err(|e| e.to_string())?;
        }
        "spawn" | "spawn-prog" => {
            let commands = spawn_commands(name, arg, args)?;
            let preput = [(
                "PARENT_ROOT_PORT_NAME".to_owned(),
                format!("port-of-{rank}"),
            )];
            let result = pmi(client)?
                .spawn(&commands, &preput)
                .map_err(|e| e.to_string())?;
            let codes: Vec<String> = result.errcodes.iter().map(i32::to_string).collect();
            let msg = result.msg.unwrap_or_default();
            writeln!(
                out,
                "spawned rc={} errcodes={} msg={msg}",
                result.rc,
                codes.join(",")
            )
            .map_err(|e| e.to_string())?;
        }
        "parent" => {
            let c = pmi(client)?;
            let port = c
                .get_optional("PARENT_ROOT_PORT_NAME")
                .map_err(|e| e.to_string())?;
            let line = format!(
                "parent {rank} spawned={} port={} appnum={:?} size={} universe={:?}",
                c.spawned(),
                port.as_deref().unwrap_or("none"),
                c.appnum(),
                c.size(),
                c.universe_size()
            );
            writeln!(out, "{line}").map_err(|e| e.to_string())?;
        }
        "sleep" => {
            out.flush().map_err(|e| e.to_string())?;
            sleep_forever();
        }
        "touch" => std::fs::write(arg, b"").map_err(|e| format!("{arg}: {e}"))?,
        "wait-file" => {
            while !std::path::Path::new(arg).exists() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            writeln!(out, "waited {rank}").map_err(|e| e.to_string())?;
        }
        _ => return Err(format!("unknown step {name:?}")),
    }
    out.flush().map_err(|e| e.to_string())
}

/// The commands of a `spawn` or `spawn-prog` step (see the module documentation).
fn spawn_commands(name: &str, arg: &str, args: &[String]) -> Result<Vec<SpawnCommand>, String> {
    let child_steps: Vec<String> = args
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .cloned()
        .collect();
    let (programs, counts, info) = if name == "spawn-prog" {
        let (programs, count) = arg.rsplit_once(':').ok_or("spawn-prog:PROGRAM:N")?;
        let programs: Vec<String> = programs.split('|').map(str::to_owned).collect();
        let counts = vec![count; programs.len()].join("+");
        (programs, counts, "")
    } else {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let (counts, info) = arg.split_once(':').unwrap_or((arg, ""));
        let exe = exe.to_string_lossy().into_owned();
        (
            vec![exe; counts.split('+').count()],
            counts.to_owned(),
            info,
        )
    };
    let info: Vec<(String, String)> = info
        .split(',')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    counts
        .split('+')
        .zip(programs)
        .map(|(count, program)| {
            Ok(SpawnCommand {
                command: program,
                args: child_steps.clone(),
                maxprocs: count.parse().map_err(|_| format!("bad count {count:?}"))?,
                info: info.clone(),
            })
        })
        .collect()
}

fn pmi(client: &mut Option<PmiClient>) -> Result<&mut PmiClient, String> {
    client
        .as_mut()
        .ok_or_else(|| "pmi is not initialised (use the init step first)".to_owned())
}

/// Puts a small and a large value, fences, and checks every peer's values.
fn exchange(client: &mut PmiClient) -> Result<(), String> {
    let (rank, size) = (client.rank(), client.size());
    let err = |e: reflex_pmi::PmiError| e.to_string();
    client
        .put(&format!("card-{rank}"), &format!("shm://{rank}"))
        .map_err(err)?;
    client
        .put_large(&format!("big-{rank}"), &big_value(rank))
        .map_err(err)?;
    client.barrier().map_err(err)?;
    for peer in 0..size {
        let card = client.get(&format!("card-{peer}")).map_err(err)?;
        let big = client.get_large(&format!("big-{peer}")).map_err(err)?;
        if card != format!("shm://{peer}") || big != big_value(peer) {
            return Err(format!("wrong values from rank {peer}"));
        }
    }
    println!("rank {rank} of {size} exchanged with every peer");
    Ok(())
}

fn big_value(rank: u32) -> String {
    format!("{rank:x}").repeat(3000)
}

/// Double fork: a middle process starts the sleeper and exits, orphaning it.
fn orphan() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let status = Command::new(exe)
        .arg("spawn-sleeper")
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("middle process failed: {status}"));
    }
    Ok(())
}

/// The middle process: starts a sleeper in a new process group (out of the job's group, so
/// only the subreaper can find it), reports its pid, exits without waiting.
fn spawn_sleeper() -> io::Result<()> {
    let exe = std::env::current_exe()?;
    let child = Command::new(exe)
        .arg("sleep")
        .process_group(0)
        .stdin(Stdio::null())
        .spawn()?;
    println!("orphan {}", child.id());
    Ok(())
}

fn sleep_forever() -> ! {
    loop {
        std::thread::park();
    }
}
