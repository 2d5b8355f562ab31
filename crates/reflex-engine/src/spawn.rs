//! `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple` the MPICH way (`docs/dynamic-processes.md`):
//! the root opens a port, asks the launcher (PMI-1 `mcmd=spawn`, `reflex_pmi::client`) to start
//! the new job with the port's name in its key-value space under `PARENT_ROOT_PORT_NAME`, and
//! tells the other processes of the communicator the outcome; then all of them accept on the
//! port ([`crate::dynproc`]). Every process of the new job reads the key in `MPI_Init` and
//! connects as one group over its `MPI_COMM_WORLD`: that intercommunicator is its
//! `MPI_Comm_get_parent`.

use crate::error::{ErrorClass, MpiError, Result};
use crate::world::World;
use crate::CommId;
pub use reflex_pmi::SpawnCommand;

/// The key-value-space key a spawned job finds its parent's port under (MPICH's name).
pub const PARENT_PORT_KEY: &str = "PARENT_ROOT_PORT_NAME";

/// What a spawn gave every process of the parent communicator.
#[derive(Debug)]
pub struct Spawned {
    /// The intercommunicator to the children (`None` when the spawn failed).
    pub intercomm: Option<CommId>,
    /// One code per process asked for (0: started), for `array_of_errcodes`.
    pub errcodes: Vec<i32>,
    /// Why the spawn failed (`MPI_ERR_SPAWN`), if it did.
    pub error: Option<MpiError>,
}

/// The root's outcome as bytes for the other processes: errcode count, codes, then the message
/// (empty on success).
fn encode_outcome(errcodes: &[i32], message: &str) -> Vec<u8> {
    let mut b = (errcodes.len() as u32).to_le_bytes().to_vec();
    b.extend(errcodes.iter().flat_map(|c| c.to_le_bytes()));
    b.extend_from_slice(message.as_bytes());
    b
}

fn decode_outcome(b: &[u8]) -> Option<(Vec<i32>, String)> {
    let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let codes = b.get(4..4 + 4 * n)?;
    let errcodes = codes
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let message = String::from_utf8_lossy(&b[4 + 4 * n..]).into_owned();
    Some((errcodes, message))
}

impl World {
    /// `MPI_Comm_spawn(_multiple)`, collective over `comm`; `commands` are significant at
    /// `root` only.
    pub fn comm_spawn(
        &mut self,
        commands: &[SpawnCommand],
        root: usize,
        comm: CommId,
    ) -> Result<Spawned> {
        let rank = self.engine.comm(comm)?.rank as usize;
        let mut port = String::new();
        let mut outcome = Vec::new();
        if rank == root {
            let (opened, codes, message) = self.spawn_at_root(commands);
            port = opened;
            outcome = encode_outcome(&codes, &message);
        }
        let all = self.engine.allgather_var(comm, &outcome)?;
        let (errcodes, message) = decode_outcome(&all[root]).ok_or_else(|| {
            MpiError::new(ErrorClass::Intern, "the root sent a damaged spawn outcome")
        })?;
        if !message.is_empty() {
            if !port.is_empty() {
                let _ = self.engine.close_port(&port);
            }
            let error = MpiError::new(ErrorClass::Spawn, message);
            return Ok(Spawned {
                intercomm: None,
                errcodes,
                error: Some(error),
            });
        }
        let accepted = self.engine.comm_accept(Ok(&port), root, comm, None);
        if !port.is_empty() {
            let _ = self.engine.close_port(&port);
        }
        Ok(Spawned {
            intercomm: Some(accepted?),
            errcodes,
            error: None,
        })
    }

    /// The root's half: a port, the launcher's answer; returns the port, the codes and an
    /// error message (empty on success).
    fn spawn_at_root(&mut self, commands: &[SpawnCommand]) -> (String, Vec<i32>, String) {
        let procs: usize = commands.iter().map(|c| c.maxprocs as usize).sum();
        let failed = |why: String| (String::new(), vec![ErrorClass::Spawn as i32; procs], why);
        let port = match self.engine.open_port() {
            Ok(port) => port,
            Err(e) => return failed(format!("cannot open the parent's port: {}", e.message)),
        };
        let preput = [(PARENT_PORT_KEY.to_owned(), port.clone())];
        match self.pmi.spawn(commands, &preput) {
            Ok(result) if result.all_started() => (port, result.errcodes, String::new()),
            Ok(result) => {
                let _ = self.engine.close_port(&port);
                let why = result.msg.unwrap_or_else(|| "no reason given".into());
                (
                    String::new(),
                    result.errcodes,
                    format!("the launcher did not start the processes: {why}"),
                )
            }
            Err(e) => {
                let _ = self.engine.close_port(&port);
                failed(format!("cannot spawn: {e}"))
            }
        }
    }

    /// In a spawned job's start-up: connects to the parent's port (all of `MPI_COMM_WORLD`,
    /// rank 0 the root); `None` when this job was not spawned.
    pub(crate) fn connect_parent(&mut self) -> Result<Option<CommId>> {
        if !self.pmi.spawned() {
            return Ok(None);
        }
        let port = self.pmi.get_optional(PARENT_PORT_KEY).map_err(|e| {
            MpiError::new(
                ErrorClass::Other,
                format!("cannot read the parent's port: {e}"),
            )
        })?;
        let Some(port) = port else {
            return Ok(None);
        };
        let parent = self
            .engine
            .comm_connect(Ok(&port), 0, crate::COMM_WORLD, None)?;
        self.engine.comm_mut(parent)?.name = "MPI_COMM_PARENT".into();
        Ok(Some(parent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_round_trip() {
        let b = encode_outcome(&[0, 42, 0], "one failed");
        assert_eq!(
            decode_outcome(&b),
            Some((vec![0, 42, 0], "one failed".into()))
        );
        assert_eq!(
            decode_outcome(&encode_outcome(&[], "")),
            Some((vec![], String::new()))
        );
        assert_eq!(decode_outcome(&b[..7]), None);
        assert_eq!(decode_outcome(&[]), None);
    }
}
