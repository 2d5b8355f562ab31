//! A rank dies with the launcher that started it.
//!
//! Reflex's `mpiexec` (and the `reflexd` session on a remote host) ends every rank when the job
//! ends; but a launcher killed outright (`SIGKILL`, an out-of-memory kill) cannot, and its ranks
//! would live on, blocked forever on peers that are gone. So a rank whose parent is the launcher
//! named in `REFLEX_LAUNCHER_PID` asks the kernel for `SIGKILL` when that parent dies
//! (`PR_SET_PDEATHSIG`). A rank started through a wrapper (a shell, a debugger) has another parent
//! and is left alone, as are ranks started by other launchers.

use reflex_base::config::LAUNCHER_PID;

/// Arms the parent-death signal when this process was started directly by a Reflex launcher.
pub fn die_with_launcher() {
    let Some(launcher) = std::env::var(LAUNCHER_PID)
        .ok()
        .and_then(|v| v.parse::<libc::pid_t>().ok())
    else {
        return;
    };
    // SAFETY: getppid has no preconditions and touches no memory.
    if unsafe { libc::getppid() } != launcher {
        return;
    }
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    // The launcher may have died before the signal was armed: then the parent is someone else.
    // SAFETY: as above.
    if unsafe { libc::getppid() } != launcher {
        eprintln!("reflex: the launcher (pid {launcher}) is gone; ending this rank");
        std::process::exit(1);
    }
}
