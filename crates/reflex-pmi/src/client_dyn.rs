//! Dynamic processes through PMI-1: spawn a new job, publish and look up service names, and
//! read keys that may be absent (a spawned job's `PARENT_ROOT_PORT_NAME`).
//!
//! The wire is MPICH's simple PMI (module [`crate::spawn`] for `mcmd=spawn`;
//! `cmd=publish_name service= port=`, `cmd=lookup_name service=`, `cmd=unpublish_name service=`
//! with `*_result` replies). A result counts as success when `rc` is 0 and, where a server
//! sends it (older Hydra), `info=ok`. Under PMIx these calls answer [`PmiError::Unsupported`];
//! a singleton cannot spawn but keeps a process-local name service.

use super::{Backend, PmiClient};
use crate::codec::Message;
use crate::spawn::{format_request, SpawnCommand, SpawnResult};
use crate::wire::Wire;
use crate::PmiError;

impl PmiClient {
    /// Asks the launcher to start a new job running `commands` (command `i` gets appnum `i`, its
    /// ranks follow those of command `i-1`), whose key-value space holds `preput` from the start.
    /// Blocks until the launcher has started every process or given up. `Ok` carries the
    /// launcher's answer, success or not ([`SpawnResult::all_started`]); `Err` is a request the
    /// client refuses to send, a backend that cannot spawn, or a broken connection.
    pub fn spawn(
        &mut self,
        commands: &[SpawnCommand],
        preput: &[(String, String)],
    ) -> Result<SpawnResult, PmiError> {
        let blocks = format_request(commands, preput)?;
        let wire = self.wire("spawn")?;
        for block in &blocks {
            wire.send_line(block)?;
        }
        let reply = wire.expect("spawn_result")?;
        let procs: u64 = commands.iter().map(|c| u64::from(c.maxprocs)).sum();
        SpawnResult::from_reply(&reply, procs as usize)
    }

    /// Publishes `port` under `service` (`MPI_Publish_name`). A service published twice is a
    /// [`PmiError::Failed`] from Reflex's launcher.
    pub fn publish_name(&mut self, service: &str, port: &str) -> Result<(), PmiError> {
        let request = Message::new("publish_name")
            .with("service", service)
            .with("port", port);
        if let Backend::Singleton(local) = &mut self.backend {
            request.to_line()?;
            if local.names.contains_key(service) {
                return Err(already_published(service));
            }
            local.names.insert(service.to_owned(), port.to_owned());
            return Ok(());
        }
        let reply = self
            .wire("publish_name")?
            .call_raw(&request, "publish_result")?;
        if name_ok(&reply) {
            return Ok(());
        }
        Err(failed("publish_name", &reply))
    }

    /// The port published under `service` (`MPI_Lookup_name`); [`PmiError::NameNotFound`] when
    /// nobody published it.
    pub fn lookup_name(&mut self, service: &str) -> Result<String, PmiError> {
        let request = Message::new("lookup_name").with("service", service);
        if let Backend::Singleton(local) = &self.backend {
            request.to_line()?;
            return local
                .names
                .get(service)
                .cloned()
                .ok_or_else(|| not_found(service));
        }
        let reply = self
            .wire("lookup_name")?
            .call_raw(&request, "lookup_result")?;
        match reply.get("port") {
            Some(port) if name_ok(&reply) => Ok(port.to_owned()),
            _ => Err(not_found(service)),
        }
    }

    /// Withdraws `service` (`MPI_Unpublish_name`); [`PmiError::NameNotFound`] when it is not
    /// published.
    pub fn unpublish_name(&mut self, service: &str) -> Result<(), PmiError> {
        let request = Message::new("unpublish_name").with("service", service);
        if let Backend::Singleton(local) = &mut self.backend {
            request.to_line()?;
            return local
                .names
                .remove(service)
                .map(drop)
                .ok_or_else(|| not_found(service));
        }
        let reply = self
            .wire("unpublish_name")?
            .call_raw(&request, "unpublish_result")?;
        if name_ok(&reply) {
            return Ok(());
        }
        Err(not_found(service))
    }

    /// Like [`PmiClient::get`], but a key nobody put is `Ok(None)`, not an error.
    pub fn get_optional(&mut self, key: &str) -> Result<Option<String>, PmiError> {
        match self.get(key) {
            Ok(value) => Ok(Some(value)),
            Err(PmiError::KeyNotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The PMI-1 connection, or [`PmiError::Unsupported`] for `what` under other backends.
    fn wire(&mut self, what: &'static str) -> Result<&mut Wire, PmiError> {
        match &mut self.backend {
            Backend::Wire(wire) => Ok(wire),
            Backend::Pmix(_) => Err(PmiError::Unsupported {
                what,
                backend: "PMIx (srun --mpi=pmix, Open MPI mpirun)",
            }),
            Backend::Singleton(_) => Err(PmiError::Unsupported {
                what,
                backend: "a singleton (no launcher)",
            }),
        }
    }
}

/// Success of a name-service reply: `rc` 0 (or absent) and `info` ok (or absent).
fn name_ok(reply: &Message) -> bool {
    reply.get("rc").is_none_or(|rc| rc == "0") && reply.get("info").is_none_or(|i| i == "ok")
}

fn failed(cmd: &'static str, reply: &Message) -> PmiError {
    PmiError::Failed {
        cmd,
        rc: reply.get("rc").unwrap_or("-1").to_owned(),
        msg: reply
            .get("msg")
            .or_else(|| reply.get("info"))
            .unwrap_or("no message")
            .to_owned(),
    }
}

fn already_published(service: &str) -> PmiError {
    PmiError::Failed {
        cmd: "publish_name",
        rc: "-1".to_owned(),
        msg: format!("service {service:?} is already published"),
    }
}

fn not_found(service: &str) -> PmiError {
    PmiError::NameNotFound {
        service: service.to_owned(),
    }
}
