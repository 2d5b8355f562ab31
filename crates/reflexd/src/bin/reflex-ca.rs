//! `reflex-ca`: creates the cluster CA and issues user and host certificates, valid for a
//! default period or the one the validity options give.

use std::path::Path;
use std::process::ExitCode;

use reflexd::ca::{save_issued, Authority, Validity, ValidityRequest, HOST_DAYS, USER_DAYS};
use reflexd::cluster_key;

const HELP: &str = "\
usage: reflex-ca init CA_DIR [NAME]            create a CA (ca.pem, ca.key, ca.name, cluster.key)
       reflex-ca user [VALIDITY] CA_DIR USER OUT_DIR
                                                issue OUT_DIR/user.pem, user.key (+ ca.pem)
       reflex-ca host [VALIDITY] CA_DIR NAME[,NAME..] OUT_DIR
                                                issue OUT_DIR/host.pem, host.key (+ ca.pem,
                                                cluster.key)
VALIDITY (default: from now, for 365 days for a user and 1825 for a host):
       --days N              valid for N days
       --valid-from DATE     valid from DATE (YYYY-MM-DD, midnight UTC) instead of now
       --not-after DATE      valid until DATE instead of for --days
A user certificate names the user (its account must exist on every host, with the same uid);
a host certificate lists the names and addresses mpiexec uses to reach that host.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (request, rest) = match split_validity(&args) {
        Ok(split) => split,
        Err(e) => {
            eprint!("reflex-ca: {e}\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let argv: Vec<&str> = rest.iter().map(String::as_str).collect();
    let period = |default_days| {
        Validity::from_request(&request, default_days)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let result = match argv.as_slice() {
        ["init", ..] if request != ValidityRequest::default() => {
            eprint!("reflex-ca: the CA has no validity options\n{HELP}");
            return ExitCode::from(2);
        }
        ["init", dir] => Authority::create("Reflex CA")
            .and_then(|ca| ca.save(Path::new(dir)))
            .and_then(|()| cluster_key::ensure(Path::new(dir))),
        ["init", dir, name] => Authority::create(name)
            .and_then(|ca| ca.save(Path::new(dir)))
            .and_then(|()| cluster_key::ensure(Path::new(dir))),
        ["user", dir, user, out] => period(USER_DAYS).and_then(|period| {
            let ca = Authority::load(Path::new(dir))?;
            let issued = ca.issue_user_for(user, period)?;
            save_issued(Path::new(out), "user", &issued, &ca.cert_pem())?;
            report(&format!("user {user}"), &period);
            Ok(())
        }),
        ["host", dir, names, out] => period(HOST_DAYS).and_then(|period| {
            let ca = Authority::load(Path::new(dir))?;
            let names: Vec<String> = names.split(',').map(str::to_owned).collect();
            let issued = ca.issue_host_for(&names, period)?;
            save_issued(Path::new(out), "host", &issued, &ca.cert_pem())?;
            cluster_key::copy_to(Path::new(dir), Path::new(out))?;
            report(&format!("host {}", names.join(",")), &period);
            Ok(())
        }),
        ["-h" | "-help" | "--help"] => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprint!("reflex-ca: bad arguments\n{HELP}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reflex-ca: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Takes the validity options out of `args` (wherever they are); returns them and the rest.
fn split_validity(args: &[String]) -> Result<(ValidityRequest, Vec<String>), String> {
    let mut request = ValidityRequest::default();
    let mut rest = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let slot = match arg.as_str() {
            "--days" | "-days" => None,
            "--valid-from" | "-valid-from" => Some(&mut request.valid_from),
            "--not-after" | "-not-after" => Some(&mut request.not_after),
            _ => {
                rest.push(arg.clone());
                continue;
            }
        };
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        match slot {
            Some(slot) => *slot = Some(value.clone()),
            None => {
                let days = value
                    .parse()
                    .ok()
                    .filter(|&d: &u32| d > 0)
                    .ok_or(format!("{arg} {value:?}: not a positive number of days"))?;
                request.days = Some(days);
            }
        }
    }
    Ok((request, rest))
}

/// Says on stderr what was issued when it is not valid now (a test certificate, or a mistake).
fn report(what: &str, period: &Validity) {
    let text = period.describe();
    if text.ends_with(')') {
        eprintln!("reflex-ca: note: the certificate of {what} is {text}");
    }
}
