//! `reflex-session`: runs one `reflexd` connection and its job (started by `reflexd` only).

fn main() {
    let args = match reflex_launch::session::SessionArgs::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("reflex-session: {e} (this program is started by reflexd)");
            std::process::exit(2);
        }
    };
    std::process::exit(reflex_launch::session::session_main(&args));
}
