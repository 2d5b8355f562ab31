//! Command line of `mpiexec`, spelled as MPICH's Hydra spells it.
//!
//! Hydra uses single-dash long options (`-np 4`, `-genv K V`, `-wdir DIR`) and also accepts
//! them with two dashes; clap cannot express single-dash long flags cleanly, so this is a small
//! hand parser. The first argument that is not an option (or the one after `--`) is the program;
//! everything after it is passed to the program untouched. Hydra options that only make sense
//! with several hosts are rejected with a clear message instead of being silently ignored.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;

/// The most ranks one host can run (each rank costs mpiexec four descriptors).
pub const MAX_RANKS: u32 = 4096;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    Help,
    Version,
    Run(Box<JobSpec>),
}

/// Which of mpiexec's own environment variables the ranks inherit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvPolicy {
    /// All of them (Hydra's default, `-genvall`).
    All,
    /// None (`-genvnone`).
    None,
    /// Only these (`-genvlist a,b`).
    List(Vec<String>),
}

/// A job to launch on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    pub ranks: u32,
    /// `-env`/`-genv` assignments, in command-line order.
    pub env: Vec<(OsString, OsString)>,
    pub env_policy: EnvPolicy,
    pub wdir: Option<PathBuf>,
    /// `-l`: prefix every output line with `[rank] `.
    pub label: bool,
    /// `-usize N`: the universe size the ranks are told (`MPI_UNIVERSE_SIZE`); default `ranks`.
    pub universe: Option<u32>,
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Where to run: this host, or other hosts through their `reflexd`.
    pub remote: RemoteOptions,
}

/// The multi-host options (`-hosts`, `-f`, `-ppn`, `-certs`, `-reflexd-port`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteOptions {
    /// `-hosts a,b:2`, parsed.
    pub hosts: Vec<crate::hosts::HostEntry>,
    /// `-f FILE` (read at launch).
    pub hostfile: Option<PathBuf>,
    /// `-ppn N`: ranks per host per round (default: the host's slots).
    pub ppn: Option<u32>,
    /// `-certs DIR`: ca.pem, user.pem, user.key (default `$HOME/.reflex`).
    pub certs: Option<PathBuf>,
    /// `-reflexd-port P` (default 7290).
    pub port: Option<u16>,
    /// `-selector HOST[:PORT],...`: ask these selectors for hosts (else the configuration's).
    pub selectors: Vec<String>,
    /// `-policy P`: the selection policy to ask for.
    pub policy: Option<String>,
}

impl RemoteOptions {
    /// Whether the job runs through reflexd on hosts given here (a host list was given).
    pub fn is_remote(&self) -> bool {
        !self.hosts.is_empty() || self.hostfile.is_some()
    }
}

/// A command line that cannot be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The text of `mpiexec --help`.
pub const HELP: &str = "\
usage: mpiexec [options] program [arguments...]

Runs `program` as an MPI job of N ranks on this host (forking them itself), or on other hosts
through their reflexd daemons (-hosts/-f), and serves PMI-1 to the ranks.

options (Hydra spelling; `--name` works as well as `-name`):
  -n N, -np N          number of ranks (default 1)
  -env NAME VALUE      set NAME=VALUE for the ranks (same as -genv: there is one executable block)
  -genv NAME VALUE     set NAME=VALUE for the ranks
  -genvlist a,b,...    pass only these variables of mpiexec's environment (plus -genv ones)
  -genvall             pass all of mpiexec's environment (the default)
  -genvnone            pass none of mpiexec's environment
  -wdir DIR            working directory of the ranks
  -l, -prepend-rank    prefix each output line with [rank] ([job:rank] for spawned jobs)
  -usize N             universe size told to the ranks (MPI_UNIVERSE_SIZE; default: -n)
  -hosts a,b:2,...     run on these hosts (name[:slots]) through their reflexd
  -f, -hostfile FILE   the same, one host per line (name, name:slots or name slots=N)
  -ppn N               ranks per host and round (default: the host's slots, else 1)
  -certs DIR           ca.pem, user.pem, user.key for reflexd (default $HOME/.reflex)
  -reflexd-port P      the daemons' port (default 7290)
  -selector H[:P],...  ask these selectors for hosts (default: the configuration's, see below)
  -policy P            selection policy: least-load, round-robin or fill (default: the selector's)
  -h, -help, --help    print this help
  --version            print the version
  --                   end of options: the next argument is the program

stdin goes to rank 0 only. SIGINT, SIGTERM and SIGHUP are forwarded to the ranks. If a rank
exits with a non-zero status, is killed by a signal or calls MPI_Abort, the other ranks are
killed and mpiexec exits with that status (128+S for signal S, the code for MPI_Abort).
MPIEXEC_TIMEOUT=S in mpiexec's environment (as for Hydra) ends a job on this host that runs
longer than S seconds; mpiexec then exits with status 124.

Without -hosts and -f, mpiexec asks a selector for N slots when -selector or the [mpiexec]
selectors of the first configuration file found ($REFLEX_CONFIG, $HOME/.reflex/config.toml,
/etc/reflex/config.toml) name one; else it runs the job on this host.
";

/// Options that need several hosts or features this single-host mpiexec does not have.
const UNSUPPORTED: &[&str] = &[
    "host",
    "launcher",
    "bootstrap",
    "rmk",
    "iface",
    "pmi-port",
    "configfile",
    "gdb",
    "bind-to",
    "binding",
    "map-by",
    "nameserver",
];

/// Parses the arguments after the program name.
pub fn parse_args<I>(args: I) -> Result<Invocation, UsageError>
where
    I: IntoIterator<Item = OsString>,
{
    let mut args = args.into_iter();
    let mut spec = JobSpec {
        ranks: 1,
        env: Vec::new(),
        env_policy: EnvPolicy::All,
        wdir: None,
        label: false,
        universe: None,
        program: OsString::new(),
        args: Vec::new(),
        remote: RemoteOptions::default(),
    };
    while let Some(arg) = args.next() {
        let Some(name) = option_name(&arg) else {
            spec.program = arg;
            return finish(spec, args);
        };
        match name.as_str() {
            "" => {
                let program = args.next().ok_or_else(|| usage("no program after --"))?;
                spec.program = program;
                return finish(spec, args);
            }
            "h" | "help" => return Ok(Invocation::Help),
            "version" | "info" => return Ok(Invocation::Version),
            "n" | "np" => spec.ranks = parse_ranks(&value(&mut args, &name)?)?,
            "env" | "genv" => {
                let key = value(&mut args, &name)?;
                let val = args
                    .next()
                    .ok_or_else(|| usage(&format!("-{name} needs a name and a value")))?;
                check_env_name(&key)?;
                spec.env.push((key, val));
            }
            "genvlist" | "envlist" => {
                let list = value(&mut args, &name)?;
                spec.env_policy = EnvPolicy::List(split_list(&list)?);
            }
            "genvall" | "envall" => spec.env_policy = EnvPolicy::All,
            "genvnone" | "envnone" => spec.env_policy = EnvPolicy::None,
            "wdir" | "dir" => spec.wdir = Some(PathBuf::from(value(&mut args, &name)?)),
            "l" | "prepend-rank" => spec.label = true,
            "usize" => spec.universe = Some(parse_usize(&value(&mut args, &name)?)?),
            "hosts" => {
                let list = value(&mut args, &name)?;
                spec.remote.hosts = crate::hosts::parse_host_list(&list.to_string_lossy())
                    .map_err(|e| usage(&format!("-hosts: {e}")))?;
            }
            "f" | "hostfile" | "machinefile" => {
                spec.remote.hostfile = Some(PathBuf::from(value(&mut args, &name)?))
            }
            "selector" => {
                let list = value(&mut args, &name)?.to_string_lossy().into_owned();
                spec.remote.selectors = crate::select::parse_selectors(&list)
                    .map_err(|e| usage(&format!("-selector: {e}")))?;
            }
            "policy" => {
                let p = value(&mut args, &name)?.to_string_lossy().into_owned();
                crate::select::check_policy(&p).map_err(|e| usage(&format!("-policy: {e}")))?;
                spec.remote.policy = Some(p);
            }
            "ppn" => spec.remote.ppn = Some(parse_ranks(&value(&mut args, &name)?)?),
            "certs" => spec.remote.certs = Some(PathBuf::from(value(&mut args, &name)?)),
            "reflexd-port" => {
                let text = value(&mut args, &name)?.to_string_lossy().into_owned();
                let port = text.parse::<u16>().ok().filter(|&p| p > 0);
                spec.remote.port = Some(
                    port.ok_or_else(|| usage(&format!("-reflexd-port {text:?}: not a port")))?,
                );
            }
            other if UNSUPPORTED.contains(&other) => {
                return Err(usage(&format!(
                    "option -{other} is not supported by this single-host mpiexec"
                )))
            }
            other => {
                return Err(usage(&format!(
                    "unknown option -{other} (see mpiexec --help)"
                )))
            }
        }
    }
    Err(usage("no program given (see mpiexec --help)"))
}

/// `-x` or `--x` → `Some("x")`; `--` → `Some("")`; anything else → `None`.
fn option_name(arg: &OsStr) -> Option<String> {
    let text = arg.to_str()?;
    if text == "--" {
        return Some(String::new());
    }
    let name = text.strip_prefix("--").or_else(|| text.strip_prefix('-'))?;
    (!name.is_empty()).then(|| name.to_owned())
}

fn usage(message: &str) -> UsageError {
    UsageError(message.to_owned())
}

/// The value that follows option `-name`.
fn value(args: &mut impl Iterator<Item = OsString>, name: &str) -> Result<OsString, UsageError> {
    args.next()
        .ok_or_else(|| usage(&format!("-{name} needs a value")))
}

fn parse_ranks(text: &OsStr) -> Result<u32, UsageError> {
    let text = text.to_string_lossy();
    match text.parse::<u32>() {
        Ok(n) if (1..=MAX_RANKS).contains(&n) => Ok(n),
        _ => Err(usage(&format!(
            "-n {text:?}: expected a number of ranks from 1 to {MAX_RANKS}"
        ))),
    }
}

/// `-usize N`: a positive number (Hydra's `SYSTEM` and `INFINITE` are not supported).
fn parse_usize(text: &OsStr) -> Result<u32, UsageError> {
    let text = text.to_string_lossy();
    match text.parse::<u32>() {
        Ok(n) if (1..=i32::MAX as u32).contains(&n) => Ok(n),
        _ => Err(usage(&format!(
            "-usize {text:?}: expected a positive universe size"
        ))),
    }
}

fn check_env_name(name: &OsStr) -> Result<(), UsageError> {
    let bytes = name.as_encoded_bytes();
    if bytes.is_empty() || bytes.contains(&b'=') || bytes.contains(&0) {
        return Err(usage(&format!(
            "{name:?} is not a valid environment variable name"
        )));
    }
    Ok(())
}

fn split_list(list: &OsStr) -> Result<Vec<String>, UsageError> {
    let text = list
        .to_str()
        .ok_or_else(|| usage("-genvlist must be utf-8"))?;
    let names: Vec<String> = text
        .split(',')
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    for name in &names {
        check_env_name(OsStr::new(name))?;
    }
    Ok(names)
}

/// The program is set; the rest are its arguments (a `:` would start a second block).
fn finish(
    mut spec: JobSpec,
    rest: impl Iterator<Item = OsString>,
) -> Result<Invocation, UsageError> {
    spec.args = rest.collect();
    if spec.program == ":" || spec.args.iter().any(|a| a == ":") {
        return Err(usage(
            "several executable blocks (':') are not supported yet",
        ));
    }
    Ok(Invocation::Run(Box::new(spec)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, UsageError> {
        parse_args(args.iter().map(OsString::from))
    }

    fn run(args: &[&str]) -> JobSpec {
        match parse(args) {
            Ok(Invocation::Run(spec)) => *spec,
            other => panic!("{args:?} -> {other:?}"),
        }
    }

    fn os(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn hydra_spellings() {
        let spec = run(&[
            "-np", "4", "-genv", "A", "1", "--env", "B", "x y", "-l", "-wdir", "/tmp", "prog",
            "-n", "9",
        ]);
        assert_eq!(spec.ranks, 4);
        assert_eq!(
            spec.env,
            [
                (OsString::from("A"), OsString::from("1")),
                ("B".into(), "x y".into())
            ]
        );
        assert!(spec.label);
        assert_eq!(spec.wdir, Some(PathBuf::from("/tmp")));
        assert_eq!(spec.universe, None);
        assert_eq!(run(&["-usize", "16", "p"]).universe, Some(16));
        assert_eq!(spec.program, "prog");
        assert_eq!(spec.args, os(&["-n", "9"]));
        assert_eq!(run(&["--n", "2", "--prepend-rank", "a"]).ranks, 2);
    }

    #[test]
    fn host_options() {
        let spec = run(&[
            "-hosts",
            "a,b:2",
            "-ppn",
            "2",
            "-certs",
            "/c",
            "-reflexd-port",
            "99",
            "p",
        ]);
        assert_eq!(spec.remote.hosts.len(), 2);
        assert_eq!(spec.remote.ppn, Some(2));
        assert_eq!(spec.remote.port, Some(99));
        assert!(spec.remote.is_remote());
        assert!(run(&["-f", "hosts.txt", "p"]).remote.is_remote());
        assert!(!run(&["p"]).remote.is_remote());
        let spec = run(&["-selector", "s1,s2:7300", "-policy", "fill", "p"]);
        assert_eq!(spec.remote.selectors, ["s1", "s2:7300"]);
        assert_eq!(spec.remote.policy.as_deref(), Some("fill"));
    }

    #[test]
    fn double_dash_ends_options() {
        let spec = run(&["-n", "2", "--", "-weird-program", "--", "x"]);
        assert_eq!(spec.program, "-weird-program");
        assert_eq!(spec.args, os(&["--", "x"]));
    }

    #[test]
    fn env_policies() {
        assert_eq!(run(&["p"]).env_policy, EnvPolicy::All);
        assert_eq!(run(&["-genvnone", "p"]).env_policy, EnvPolicy::None);
        let list = run(&["-genvlist", "PATH,HOME,", "p"]).env_policy;
        assert_eq!(list, EnvPolicy::List(vec!["PATH".into(), "HOME".into()]));
        assert_eq!(
            run(&["-genvnone", "-genvall", "p"]).env_policy,
            EnvPolicy::All
        );
    }

    #[test]
    fn help_and_version() {
        for h in ["-h", "-help", "--help"] {
            assert_eq!(parse(&[h]), Ok(Invocation::Help));
        }
        assert_eq!(parse(&["--version"]), Ok(Invocation::Version));
        assert_eq!(parse(&["-n", "2", "-h", "prog"]), Ok(Invocation::Help));
    }

    #[test]
    fn errors_are_precise() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "no program given"),
            (&["-n"], "-n needs a value"),
            (&["-n", "0", "p"], "from 1 to 4096"),
            (&["-n", "x", "p"], "expected a number of ranks"),
            (&["-genv", "A"], "-genv needs a name and a value"),
            (
                &["-genv", "A=B", "1", "p"],
                "not a valid environment variable name",
            ),
            (
                &["-launcher", "ssh", "p"],
                "-launcher is not supported by this single-host mpiexec",
            ),
            (&["-hosts", "a:0", "p"], "-hosts: host a"),
            (&["-reflexd-port", "0", "p"], "not a port"),
            (&["-selector", "s:0", "p"], "-selector: selector \"s:0\""),
            (
                &["-policy", "random", "p"],
                "-policy: unknown policy \"random\"",
            ),
            (
                &["-usize", "0", "p"],
                "-usize \"0\": expected a positive universe size",
            ),
            (&["-frob", "p"], "unknown option -frob"),
            (&["--"], "no program after --"),
            (&["a", ":", "b"], "several executable blocks"),
        ];
        for (args, want) in cases {
            let err = parse(args).unwrap_err();
            assert!(err.0.contains(want), "{args:?}: {err}");
        }
    }

    #[test]
    fn non_utf8_program_arguments_pass_through() {
        use std::os::unix::ffi::OsStringExt;
        let odd = OsString::from_vec(vec![b'-', 0xff]);
        let args = vec![OsString::from("prog"), odd.clone()];
        match parse_args(args).unwrap() {
            Invocation::Run(spec) => assert_eq!(spec.args, [odd]),
            other => panic!("{other:?}"),
        }
    }
}
