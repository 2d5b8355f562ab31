//! The name service of PMI-1 (`publish_name`, `lookup_name`, `unpublish_name`), behind
//! `MPI_Publish_name`, `MPI_Lookup_name` and `MPI_Unpublish_name`. The launcher keeps the
//! names (Reflex's `mpiexec`: one table per `mpiexec`; Hydra: its name server); a singleton keeps
//! them in its own store. PMIx has no such calls here: they fail with a message.

use super::{Backend, PmiClient};
use crate::codec::Message;
use crate::PmiError;

/// Key of a singleton's published name in its local store.
fn local_key(service: &str) -> String {
    format!("reflex-name:{service}")
}

fn unsupported(call: &'static str) -> PmiError {
    PmiError::Pmix {
        call,
        status: -1,
        text: "the pmix client has no name service".into(),
    }
}

impl PmiClient {
    /// Publishes `port` under `service`.
    pub fn publish_name(&mut self, service: &str, port: &str) -> Result<(), PmiError> {
        match &mut self.backend {
            Backend::Wire(wire) => {
                let request = Message::new("publish_name")
                    .with("service", service)
                    .with("port", port);
                wire.call(&request, "publish_result").map(drop)
            }
            Backend::Pmix(_) => Err(unsupported("publish_name")),
            Backend::Singleton(store) => {
                store.insert(local_key(service), port.to_owned());
                Ok(())
            }
        }
    }

    /// The port published under `service`; `None` when nothing is.
    pub fn lookup_name(&mut self, service: &str) -> Result<Option<String>, PmiError> {
        match &mut self.backend {
            Backend::Wire(wire) => {
                let request = Message::new("lookup_name").with("service", service);
                wire.send_line(&request.to_line()?)?;
                let reply = wire.expect("lookup_result")?;
                match (reply.get("rc"), reply.get("port")) {
                    (Some("0"), Some(port)) => Ok(Some(port.to_owned())),
                    _ => Ok(None),
                }
            }
            Backend::Pmix(_) => Err(unsupported("lookup_name")),
            Backend::Singleton(store) => Ok(store.get(&local_key(service)).cloned()),
        }
    }

    /// Withdraws `service`; `false` when it was not published.
    pub fn unpublish_name(&mut self, service: &str) -> Result<bool, PmiError> {
        match &mut self.backend {
            Backend::Wire(wire) => {
                let request = Message::new("unpublish_name").with("service", service);
                wire.send_line(&request.to_line()?)?;
                let reply = wire.expect("unpublish_result")?;
                Ok(reply.get("rc") == Some("0"))
            }
            Backend::Pmix(_) => Err(unsupported("unpublish_name")),
            Backend::Singleton(store) => Ok(store.remove(&local_key(service)).is_some()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_singleton_keeps_its_names() {
        let mut c = PmiClient::singleton();
        assert_eq!(c.lookup_name("svc").unwrap(), None);
        c.publish_name("svc", "reflex-port:tcp://127.0.0.1:1:00")
            .unwrap();
        assert_eq!(
            c.lookup_name("svc").unwrap().as_deref(),
            Some("reflex-port:tcp://127.0.0.1:1:00")
        );
        assert!(c.unpublish_name("svc").unwrap());
        assert!(!c.unpublish_name("svc").unwrap());
        assert_eq!(c.lookup_name("svc").unwrap(), None);
    }
}
