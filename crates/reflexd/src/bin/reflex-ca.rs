//! `reflex-ca`: creates the cluster CA and issues user and host certificates.

use std::path::Path;
use std::process::ExitCode;

use reflexd::ca::{save_issued, Authority};
use reflexd::cluster_key;

const HELP: &str = "\
usage: reflex-ca init CA_DIR [NAME]            create a CA (ca.pem, ca.key, ca.name, cluster.key)
       reflex-ca user CA_DIR USER OUT_DIR       issue OUT_DIR/user.pem, user.key (+ ca.pem)
       reflex-ca host CA_DIR NAME[,NAME..] OUT_DIR
                                                issue OUT_DIR/host.pem, host.key (+ ca.pem,
                                                cluster.key)
A user certificate names the user (its account must exist on every host, with the same uid);
a host certificate lists the names and addresses mpiexec uses to reach that host.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match argv.as_slice() {
        ["init", dir] => Authority::create("Reflex CA")
            .and_then(|ca| ca.save(Path::new(dir)))
            .and_then(|()| cluster_key::ensure(Path::new(dir))),
        ["init", dir, name] => Authority::create(name)
            .and_then(|ca| ca.save(Path::new(dir)))
            .and_then(|()| cluster_key::ensure(Path::new(dir))),
        ["user", dir, user, out] => Authority::load(Path::new(dir)).and_then(|ca| {
            let issued = ca.issue_user(user)?;
            save_issued(Path::new(out), "user", &issued, &ca.cert_pem())
        }),
        ["host", dir, names, out] => Authority::load(Path::new(dir)).and_then(|ca| {
            let names: Vec<String> = names.split(',').map(str::to_owned).collect();
            let issued = ca.issue_host(&names)?;
            save_issued(Path::new(out), "host", &issued, &ca.cert_pem())?;
            cluster_key::copy_to(Path::new(dir), Path::new(out))
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
