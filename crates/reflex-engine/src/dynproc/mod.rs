//! Dynamic process management (MPI-4.0 §11.4, `docs/dynamic-processes.md`): ports, accept and
//! connect, join, disconnect.
//!
//! Two groups connect in four steps, the way `MPI_Intercomm_create` does within a job
//! ([`crate::comm_inter`]): (1) each group gathers, over its own communicator, every member's
//! context-id proposal, global identity ([`crate::procs`]) and bridge card (a TCP listener for
//! other jobs, created on first use: [`crate::fabric::Fabric::bridge`]); (2) the two roots swap
//! these [`Offer`]s over a TCP connection, the connector to the acceptor's port (showing the
//! port's nonce first) or both ends of the socket `MPI_Comm_join` was given; (3) each root hands
//! the agreed context id (the highest proposal of both groups) and the other group's offer to its
//! group; (4) every process gives each remote member an index (a new one for a process of
//! another job, which its bridge from then on accepts connections from and connects to) and
//! builds the intercommunicator. Processes of the same job keep their world ranks and shared
//! memory; processes of other jobs are always reached over TCP, even on one host.

pub mod handshake;
pub mod port;

use crate::comm::{CommId, Group};
use crate::engine::Engine;
use crate::error::{ErrorClass, MpiError, Result};
use crate::fabric::Fabric;
use crate::procs::{GlobalId, GLOBAL_ID_LEN};
use handshake::{greeting, read_frame, write_frame, Offer};
use port::PortName;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Longest wait for a connector's greeting and offer once its connection is accepted (a
/// connector sends both at once; this only keeps a stalled stranger from holding the port).
const GREETING_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause between two looks at a port's listener while no connector is waiting.
const ACCEPT_NAP: Duration = Duration::from_millis(1);

/// Which end of the exchange the root of a group is.
#[derive(Debug, Clone, Copy)]
enum Side<'a> {
    Accept(&'a str),
    Connect(&'a str),
}

fn other(what: &str, e: impl std::fmt::Display) -> MpiError {
    MpiError::new(ErrorClass::Other, format!("{what}: {e}"))
}

/// An error's class as one byte of a root's summary (MPI classes fit), and back.
fn class_byte(c: ErrorClass) -> u8 {
    u8::try_from(c as i32).unwrap_or(ErrorClass::Intern as u8)
}

fn byte_class(b: u8) -> ErrorClass {
    ErrorClass::from_i32(i32::from(b)).unwrap_or(ErrorClass::Intern)
}

impl Engine<Fabric> {
    /// `MPI_Open_port`: a new port of this process; returns its name.
    pub fn open_port(&mut self) -> Result<String> {
        self.ports.open()
    }

    /// `MPI_Close_port`.
    pub fn close_port(&mut self, name: &str) -> Result<()> {
        self.ports.close(name)
    }

    /// `MPI_Comm_accept` (collective over `comm`; `port` significant at `root` only): waits for
    /// a connector on `port`, at most `timeout` (`None`: for ever). An `Err` port is the root's
    /// invalid argument: every process of `comm` returns that error.
    pub fn comm_accept(
        &mut self,
        port: Result<&str>,
        root: usize,
        comm: CommId,
        timeout: Option<Duration>,
    ) -> Result<CommId> {
        self.connect_groups(port.map(Side::Accept), root, comm, timeout)
    }

    /// `MPI_Comm_connect` (collective over `comm`; `port` significant at `root` only, an `Err`
    /// as for [`Engine::comm_accept`]); the acceptor's answer is awaited at most `timeout`
    /// (`None`: for ever).
    pub fn comm_connect(
        &mut self,
        port: Result<&str>,
        root: usize,
        comm: CommId,
        timeout: Option<Duration>,
    ) -> Result<CommId> {
        self.connect_groups(port.map(Side::Connect), root, comm, timeout)
    }

    /// `MPI_Comm_join`: an intercommunicator with the process at the other end of `socket`
    /// (which calls it too), each group this process alone.
    pub fn comm_join(&mut self, socket: &mut (impl Read + Write)) -> Result<CommId> {
        let (me, card) = self.my_entry()?;
        let offer = Offer {
            proposal: self.comms.next_ctx,
            members: vec![(me, card)],
        };
        let io = |e: io::Error| other("MPI_Comm_join: the socket failed", e);
        write_frame(socket, &offer.encode()).map_err(io)?;
        let theirs = read_frame(socket).map_err(io)?;
        let theirs = Offer::decode(&theirs)
            .map_err(|e| other("MPI_Comm_join: the other end sent a damaged offer", e))?;
        if theirs.members.len() != 1 {
            return Err(MpiError::new(
                ErrorClass::Other,
                format!(
                    "MPI_Comm_join: the other end offered {} processes, not one",
                    theirs.members.len()
                ),
            ));
        }
        let ctx = offer.proposal.max(theirs.proposal);
        let world = self.comms.get(crate::COMM_WORLD)?;
        let (errhandler, me) = (world.errhandler, self.core.me as u32);
        let local = Group {
            members: vec![me].into(),
        };
        self.finish_connection(ctx, 0, local, &theirs, errhandler)
    }

    /// `MPI_Comm_disconnect`'s wait after its barrier (which the caller runs as a collective,
    /// waited for without the library lock under `MPI_THREAD_MULTIPLE`): until nothing this
    /// process queued for the processes of `comm` is left (which needs their progress only).
    /// The caller frees the communicator.
    pub fn comm_drain(&mut self, comm: CommId) -> Result<()> {
        let peers = self.comms.get(comm)?.peers().members.clone();
        self.wait_until(|e| peers.iter().all(|&p| e.core.outbox[p as usize].is_empty()))
    }

    /// This process's identity and bridge card (the bridge is created at the first call).
    fn my_entry(&mut self) -> Result<(GlobalId, String)> {
        let me = self.my_id();
        let world = self.procs.world();
        let bridge = self
            .fabric
            .bridge(world, (me.job, me.rank))
            .map_err(|e| other("cannot open the bridge to other jobs", e))?;
        Ok((me, bridge.card()))
    }

    fn my_id(&self) -> GlobalId {
        GlobalId {
            job: self.procs.job(),
            rank: self.core.me as u32,
        }
    }

    /// The index of process `id`; a process of another job is added (and its bridge card
    /// recorded) the first time.
    fn meet(&mut self, id: GlobalId, card: &str) -> Result<usize> {
        if let Some(index) = self.procs.index_of(id) {
            return Ok(index);
        }
        if id.job == self.procs.job() {
            return Err(MpiError::new(
                ErrorClass::Intern,
                format!(
                    "the other group names rank {} of this job, which does not exist",
                    id.rank
                ),
            ));
        }
        let index = self.procs.len();
        let (world, me) = (self.procs.world(), self.my_id());
        let bridge = self
            .fabric
            .bridge(world, (me.job, me.rank))
            .map_err(|e| other("cannot open the bridge to other jobs", e))?;
        bridge
            .add_peer(index, (id.job, id.rank), card)
            .map_err(|e| other(&format!("process {} of job {:016x}", id.rank, id.job), e))?;
        self.procs.add(id);
        self.grow_to(index);
        Ok(index)
    }

    /// Steps (1) to (4) of the module documentation over `comm`, whose `root` is the `side` (or
    /// has the error every process returns).
    fn connect_groups(
        &mut self,
        side: Result<Side<'_>>,
        root: usize,
        comm: CommId,
        timeout: Option<Duration>,
    ) -> Result<CommId> {
        let c = self.intra(comm)?;
        let (group, rank, errhandler) = (c.group.clone(), c.rank as usize, c.errhandler);
        let (me, card) = self.my_entry()?;
        let mut mine = self.comms.next_ctx.to_le_bytes().to_vec();
        mine.extend_from_slice(&me.encode());
        mine.extend_from_slice(card.as_bytes());
        let all = self.allgather_var(comm, &mine)?;
        let offer = gathered_offer(&all)?;
        let mut summary = Vec::new();
        if rank == root {
            let deadline = timeout.map(|t| Instant::now() + t);
            summary = match side.and_then(|side| self.root_exchange(side, &offer, deadline)) {
                Ok(theirs) => {
                    let mut s = vec![0u8];
                    s.extend_from_slice(&offer.proposal.max(theirs.proposal).to_le_bytes());
                    s.extend_from_slice(&theirs.encode());
                    s
                }
                Err(e) => {
                    let mut s = vec![1u8, class_byte(e.class)];
                    s.extend_from_slice(e.message.as_bytes());
                    s
                }
            };
        }
        let summaries = self.allgather_var(comm, &summary)?;
        let (ctx, theirs) = parse_summary(&summaries[root])?;
        self.finish_connection(ctx, rank as u32, group, &theirs, errhandler)
    }

    /// Step (4): indices for the remote members, the new intercommunicator.
    fn finish_connection(
        &mut self,
        ctx: u32,
        rank: u32,
        local: Group,
        theirs: &Offer,
        errhandler: i32,
    ) -> Result<CommId> {
        let mut remote = Vec::with_capacity(theirs.members.len());
        for (id, card) in &theirs.members {
            remote.push(self.meet(*id, card)? as u32);
        }
        if let Some(both) = remote.iter().find(|m| local.rank_of(**m).is_some()) {
            let id = self.procs.id_of(*both as usize).unwrap_or(self.my_id());
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!(
                    "process {} of job {:016x} is in both groups of the connection",
                    id.rank, id.job
                ),
            ));
        }
        self.comms.next_ctx = self.comms.next_ctx.max(ctx + 4);
        let remote = Group {
            members: remote.into(),
        };
        Ok(self.insert_inter(ctx, rank, local, remote, errhandler))
    }

    /// Step (2) at the root: swaps offers with the other group's root.
    fn root_exchange(
        &mut self,
        side: Side<'_>,
        offer: &Offer,
        deadline: Option<Instant>,
    ) -> Result<Offer> {
        match side {
            Side::Accept(port) => self.accept_connector(port, offer, deadline),
            Side::Connect(port) => connect_acceptor(port, offer, deadline),
        }
    }

    /// Waits (driving progress) for a connector on `port` that shows the port's nonce; returns
    /// its offer after sending ours. Connections that do not greet properly are dropped.
    fn accept_connector(
        &mut self,
        port: &str,
        offer: &Offer,
        deadline: Option<Instant>,
    ) -> Result<Offer> {
        let (listener, nonce) = self.ports.get(port)?;
        let listener = listener
            .try_clone()
            .map_err(|e| other("cannot watch the port", e))?;
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    if let Ok(theirs) = serve_connector(stream, nonce, offer) {
                        return Ok(theirs);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(MpiError::new(
                            ErrorClass::Other,
                            format!("MPI_Comm_accept: no process connected to {port} in time"),
                        ));
                    }
                    if self.progress() == 0 {
                        std::thread::sleep(ACCEPT_NAP);
                    }
                    self.check_fatal()?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(other(&format!("MPI_Comm_accept on {port}"), e)),
            }
        }
    }
}

/// The acceptor's side of one accepted connection.
fn serve_connector(mut stream: TcpStream, nonce: u64, offer: &Offer) -> io::Result<Offer> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(GREETING_TIMEOUT))?;
    let mut hello = [0u8; 14];
    stream.read_exact(&mut hello)?;
    if hello != greeting(nonce) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "wrong greeting"));
    }
    let theirs = read_frame(&mut stream)?;
    let theirs =
        Offer::decode(&theirs).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    write_frame(&mut stream, &offer.encode())?;
    Ok(theirs)
}

/// The connector's side: greets the port, sends our offer, returns the acceptor's.
fn connect_acceptor(port: &str, offer: &Offer, deadline: Option<Instant>) -> Result<Offer> {
    let name = PortName::parse(port)?;
    let left = || {
        deadline.map(|d| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        })
    };
    let unreachable = |e: io::Error| {
        MpiError::new(
            ErrorClass::Port,
            format!("MPI_Comm_connect: cannot reach port {port}: {e}"),
        )
    };
    let addr = std::net::SocketAddr::V4(name.addr);
    let mut stream = match left() {
        Some(t) => TcpStream::connect_timeout(&addr, t),
        None => TcpStream::connect(addr),
    }
    .map_err(unreachable)?;
    stream.set_read_timeout(left()).map_err(unreachable)?;
    let _ = stream.set_nodelay(true);
    stream
        .write_all(&greeting(name.nonce))
        .and_then(|()| write_frame(&mut stream, &offer.encode()))
        .map_err(unreachable)?;
    let answer = read_frame(&mut stream).map_err(|e| {
        let why = match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                "no answer in time (is a process accepting on it?)".to_owned()
            }
            io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset => {
                "it closed the connection (a closed port, or a wrong nonce)".to_owned()
            }
            _ => e.to_string(),
        };
        MpiError::new(
            ErrorClass::Port,
            format!("MPI_Comm_connect to port {port}: {why}"),
        )
    })?;
    Offer::decode(&answer).map_err(|e| {
        MpiError::new(
            ErrorClass::Port,
            format!("MPI_Comm_connect: port {port} answered a damaged offer: {e}"),
        )
    })
}

/// Step (1)'s result: the group's offer from every member's (proposal, identity, card).
fn gathered_offer(all: &[Vec<u8>]) -> Result<Offer> {
    let mut offer = Offer {
        proposal: 0,
        members: Vec::with_capacity(all.len()),
    };
    for b in all {
        let bad = || MpiError::new(ErrorClass::Intern, "a member sent a damaged entry");
        let proposal =
            u32::from_le_bytes(b.get(..4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
        let id = GlobalId::decode(b.get(4..).ok_or_else(bad)?).ok_or_else(bad)?;
        let card = std::str::from_utf8(&b[4 + GLOBAL_ID_LEN..]).map_err(|_| bad())?;
        offer.proposal = offer.proposal.max(proposal);
        offer.members.push((id, card.to_owned()));
    }
    Ok(offer)
}

/// Step (3)'s result at every member: the agreed context and the other group, or the root's
/// error.
fn parse_summary(s: &[u8]) -> Result<(u32, Offer)> {
    let bad = || MpiError::new(ErrorClass::Intern, "the root sent a damaged summary");
    match s.first() {
        Some(0) => {
            let ctx =
                u32::from_le_bytes(s.get(1..5).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
            let theirs = Offer::decode(&s[5..]).map_err(|_| bad())?;
            Ok((ctx, theirs))
        }
        Some(1) => {
            let class = byte_class(*s.get(1).ok_or_else(bad)?);
            let message = String::from_utf8_lossy(&s[2..]).into_owned();
            Err(MpiError::new(class, message))
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_carry_the_roots_outcome() {
        let offer = Offer {
            proposal: 9,
            members: vec![(GlobalId { job: 3, rank: 1 }, "card".into())],
        };
        let mut ok = vec![0u8];
        ok.extend_from_slice(&12u32.to_le_bytes());
        ok.extend_from_slice(&offer.encode());
        assert_eq!(parse_summary(&ok).unwrap(), (12, offer));
        let mut failed = vec![1u8, class_byte(ErrorClass::Port)];
        failed.extend_from_slice(b"no such port");
        let e = parse_summary(&failed).unwrap_err();
        assert_eq!(
            (e.class, e.message.as_str()),
            (ErrorClass::Port, "no such port")
        );
        for class in [ErrorClass::Info, ErrorClass::Other, ErrorClass::Port] {
            assert_eq!(byte_class(class_byte(class)), class);
        }
        assert_eq!(parse_summary(&[]).unwrap_err().class, ErrorClass::Intern);
        assert_eq!(
            parse_summary(&[0, 1]).unwrap_err().class,
            ErrorClass::Intern
        );
    }

    #[test]
    fn members_entries_make_the_groups_offer() {
        let entry = |p: u32, rank: u32, card: &str| {
            let mut b = p.to_le_bytes().to_vec();
            b.extend_from_slice(&GlobalId { job: 5, rank }.encode());
            b.extend_from_slice(card.as_bytes());
            b
        };
        let o = gathered_offer(&[entry(6, 0, "a"), entry(10, 1, "bc")]).unwrap();
        assert_eq!(o.proposal, 10);
        assert_eq!(
            o.members[1],
            (GlobalId { job: 5, rank: 1 }, "bc".to_owned())
        );
        assert!(gathered_offer(&[vec![1, 2]]).is_err());
    }
}
