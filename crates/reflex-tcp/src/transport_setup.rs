//! Connection set-up of [`TcpTransport`]: opening a connection to a peer on the first send,
//! accepting connections, reading their hellos, deciding with [`crate::link`]'s rules which
//! connection of a pair survives, keeping the hellos of processes not yet introduced (bridges)
//! parked, and reporting a link that broke. The data path (reading, sending, polling) is in the
//! parent module.

use super::*;

impl TcpTransport {
    /// Starts connecting to `peer`.
    pub(super) fn connect(&mut self, peer: usize) {
        match self.open(peer, 0) {
            Ok(conn) => {
                self.links[peer] = Link::Connecting {
                    conn,
                    connected: false,
                }
            }
            Err(e) => self.break_link(peer, e.to_string()),
        }
    }

    /// Opens stream `index` to `peer`: connects and queues the hello.
    pub(crate) fn open(&mut self, peer: usize, index: usize) -> io::Result<Conn> {
        let card = self.cards[peer].as_ref().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no business card for rank {peer}"),
            )
        })?;
        let addr = card.choose(&self.my_addrs);
        let (job, from, to) = match &self.bridge {
            Some(ids) => {
                let them = ids.id_of(peer).map_or(u32::MAX, |id| id.1);
                (ids.me.0, ids.me.1, them)
            }
            None => (0, self.me as u32, peer as u32),
        };
        let hello = Hello {
            from,
            to,
            cookie: card.cookie,
            stream: index as u8,
            streams: self.streams as u8,
            job,
        };
        let fd: OwnedFd = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(errno)?;
        match connect(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &SockaddrIn::from(addr),
        ) {
            Ok(()) | Err(Errno::EINPROGRESS) => {}
            Err(e) => {
                return Err(with_context(
                    errno(e),
                    &format!("cannot connect to rank {peer} at {addr}"),
                ))
            }
        }
        let stream = TcpStream::from(fd);
        self.tune(&stream)?;
        let mut conn = Conn::new(stream);
        conn.queue(&hello.encode());
        let interest = EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT;
        self.epoll
            .add(&conn.stream, EpollEvent::new(interest, token(peer, index)))
            .map_err(errno)?;
        conn.watching_out = true;
        Ok(conn)
    }

    /// The options of every connection: `TCP_NODELAY` and, unless it is off, keepalive.
    fn tune(&self, stream: &TcpStream) -> io::Result<()> {
        stream.set_nodelay(true)?;
        self.keepalive.map_or(Ok(()), |k| k.apply(stream))
    }

    /// Every established connection to a peer (all its streams), for [`crate::stall`].
    pub(crate) fn open_streams(&self) -> impl Iterator<Item = (usize, &TcpStream)> {
        let first = self
            .links
            .iter()
            .enumerate()
            .filter_map(|(peer, link)| match link {
                Link::Up(conn) => Some((peer, &conn.stream)),
                _ => None,
            });
        let others = self.stripes.iter().enumerate().flat_map(|(peer, s)| {
            s.extra
                .iter()
                .flatten()
                .filter(|e| e.connected)
                .map(move |e| (peer, &e.conn.stream))
        });
        first.chain(others)
    }

    /// Marks the link to `peer` broken (closing its connection) by a failure, the first of
    /// which [`Transport::failed_link`] reports.
    pub(crate) fn break_link(&mut self, peer: usize, reason: String) {
        if self.failed.is_none() {
            self.failed = Some((peer, reason.clone(), Instant::now()));
        }
        self.close_link(peer, reason);
    }

    /// Ends the link to `peer`, which closed it in order (between frames): not a failure,
    /// since a rank that finishes closes its connections while others still run.
    pub(crate) fn close_link(&mut self, peer: usize, reason: String) {
        let old = std::mem::replace(
            &mut self.links[peer],
            Link::Broken {
                reason,
                reported: false,
            },
        );
        if let Link::Connecting { conn, .. } | Link::Up(conn) = old {
            let _ = self.epoll.delete(&conn.stream);
        }
        for e in std::mem::take(&mut self.stripes[peer])
            .extra
            .into_iter()
            .flatten()
        {
            let _ = self.epoll.delete(&e.conn.stream);
        }
    }

    /// Breaks the link to `peer`, which sent something that breaks the protocol.
    pub(crate) fn malformed(&mut self, peer: usize, what: &str) {
        let reason = format!("rank {peer} sent {what}; disconnected");
        eprintln!("reflex: tcp: {}: {reason}", self.name());
        self.break_link(peer, reason);
    }

    /// Prints once why `peer` cannot be reached.
    pub(super) fn report_broken(&mut self, peer: usize) {
        let me = self.name();
        if let Link::Broken { reason, reported } = &mut self.links[peer] {
            if !*reported {
                *reported = true;
                eprintln!("reflex: tcp: {me} cannot send to rank {peer}: {reason}");
            }
        }
    }

    /// Puts a detached connection (`crate::hot`) back into the epoll set, watched for
    /// writability too when a frame's tail waits.
    pub(crate) fn attach(epoll: &Epoll, conn: &mut Conn, token: u64) -> io::Result<()> {
        let want = conn.tx_pending();
        let mut flags = EpollFlags::EPOLLIN;
        if want {
            flags |= EpollFlags::EPOLLOUT;
        }
        epoll
            .add(&conn.stream, EpollEvent::new(flags, token))
            .map_err(errno)?;
        conn.detached = false;
        conn.watching_out = want;
        Ok(())
    }

    /// Updates epoll's interest in writability of a connection (a detached one goes back into
    /// the epoll set when it must wait for room).
    pub(crate) fn watch_out(epoll: &Epoll, conn: &mut Conn, token: u64) -> io::Result<()> {
        let want = conn.tx_pending();
        if conn.detached {
            return if want {
                Self::attach(epoll, conn, token)
            } else {
                Ok(())
            };
        }
        if want != conn.watching_out {
            let mut flags = EpollFlags::EPOLLIN;
            if want {
                flags |= EpollFlags::EPOLLOUT;
            }
            epoll
                .modify(&conn.stream, &mut EpollEvent::new(flags, token))
                .map_err(errno)?;
            conn.watching_out = want;
        }
        Ok(())
    }

    pub(super) fn accept_new(&mut self) {
        for _ in 0..ACCEPT_BURST {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return, // WouldBlock, or a connection that died before accept
            };
            if stream.set_nonblocking(true).is_err() || self.tune(&stream).is_err() {
                continue;
            }
            let id = self.next_incoming;
            self.next_incoming += 1;
            let token = INCOMING | (id & (INCOMING - 1));
            if self
                .epoll
                .add(&stream, EpollEvent::new(EpollFlags::EPOLLIN, token))
                .is_err()
            {
                continue;
            }
            if self.unidentified.len() >= MAX_UNIDENTIFIED {
                let oldest = self.unidentified.keys().min().copied();
                if let Some(conn) = oldest.and_then(|k| self.unidentified.remove(&k)) {
                    let _ = self.epoll.delete(&conn.stream);
                    self.stats.refused += 1;
                }
            }
            self.unidentified.insert(token, Conn::new(stream));
        }
    }

    /// Reads the hello of an accepted connection and keeps, rejects or refuses it.
    pub(super) fn identify(&mut self, token: u64) {
        let Some(mut conn) = self.unidentified.remove(&token) else {
            return;
        };
        let hello = match conn.read(0) {
            Ok(ReadOutcome::Data(_)) => match conn.next_frame(0) {
                Ok(None) => {
                    self.unidentified.insert(token, conn);
                    return;
                }
                Ok(Some((h, range))) if h.kind == Kind::Hello && h.len == HELLO_LEN => {
                    let hello = Hello::parse(conn.payload(range.clone()));
                    conn.consume(range);
                    hello.map_err(|e| e.to_string())
                }
                Ok(Some((h, _))) => Err(format!("{:?} frame before hello", h.kind)),
                Err(e) => Err(e.to_string()),
            },
            Ok(ReadOutcome::Empty) => {
                self.unidentified.insert(token, conn);
                return;
            }
            Ok(ReadOutcome::Eof) => Err("closed before hello".into()),
            Err(e) => Err(e.to_string()),
        };
        match hello {
            Ok(h) => self.decide(h, conn, token),
            Err(why) => self.act_on(Verdict::Refuse(why), conn),
        }
    }

    /// Judges the hello `h` of connection `conn` (epoll token `token`). On a bridge, a proper
    /// hello from a process this one was not told about yet is parked: its job may learn of
    /// this process before this process learns of it (the two groups of an accept/connect hear
    /// the outcome from their roots at different times). [`TcpTransport::add_peer`] takes it up.
    fn decide(&mut self, h: Hello, conn: Conn, token: u64) {
        if self
            .bridge
            .as_ref()
            .is_some_and(|ids| ids.awaits(self.cookie, &h))
        {
            let _ = self.epoll.delete(&conn.stream);
            if self.parked.len() >= MAX_UNIDENTIFIED {
                self.parked.remove(0);
                self.stats.refused += 1;
            }
            self.parked.push((token, h, conn));
            return;
        }
        let verdict = {
            {
                let (links, stripes) = (&self.links, &self.stripes);
                let joinable = |p: usize, k: usize| {
                    links[p].phase() == LinkPhase::Up
                        && stripes[p].acceptor
                        && stripes[p].extra.get(k - 1).is_some_and(Option::is_none)
                };
                let who = match &self.bridge {
                    Some(ids) => ids.sender(self.cookie, &h),
                    None => job_sender(self.me, links.len(), self.cookie, &h),
                };
                judge_from(who, self.streams, &h, |p| links[p].phase(), joinable)
            }
        };
        self.act_on(verdict, conn);
    }

    /// Judges again the parked hellos whose senders are known now.
    pub(super) fn unpark(&mut self) {
        let parked = std::mem::take(&mut self.parked);
        for (token, h, conn) in parked {
            let known = self
                .bridge
                .as_ref()
                .is_some_and(|ids| !ids.awaits(self.cookie, &h));
            if !known {
                self.parked.push((token, h, conn));
                continue;
            }
            let event = EpollEvent::new(EpollFlags::EPOLLIN, token);
            if self.epoll.add(&conn.stream, event).is_ok() {
                self.decide(h, conn, token);
            }
        }
    }

    fn act_on(&mut self, verdict: Verdict, mut conn: Conn) {
        let mut answer = [0u8; HEADER_LEN];
        match verdict {
            Verdict::Accept { peer, abandon_own } => {
                encode_header(&mut answer, Kind::Accept, 0);
                if abandon_own {
                    self.stats.rejected += 1;
                }
                if let Link::Connecting { conn: own, .. } =
                    std::mem::replace(&mut self.links[peer], Link::Idle)
                {
                    let _ = self.epoll.delete(&own.stream);
                }
                let kept = conn.send(&answer).and_then(|()| {
                    // Re-key the connection from "unidentified" to the peer's rank.
                    let mut flags = EpollFlags::EPOLLIN;
                    if conn.tx_pending() {
                        flags |= EpollFlags::EPOLLOUT;
                    }
                    self.epoll
                        .modify(&conn.stream, &mut EpollEvent::new(flags, peer as u64))
                        .map_err(errno)?;
                    conn.watching_out = conn.tx_pending();
                    Ok(())
                });
                match kept {
                    Ok(()) => {
                        self.stats.accepts += 1;
                        self.links[peer] = Link::Up(conn);
                        self.stripes[peer] = Streams {
                            extra: (1..self.streams).map(|_| None).collect(),
                            acceptor: true,
                            ..Streams::default()
                        };
                    }
                    Err(e) => self.break_link(peer, format!("cannot answer its hello: {e}")),
                }
            }
            Verdict::Join { peer, stream } => {
                encode_header(&mut answer, Kind::Accept, 0);
                let kept = conn.send(&answer).and_then(|()| {
                    let token = token(peer, stream);
                    let mut event = EpollEvent::new(EpollFlags::EPOLLIN, token);
                    self.epoll.modify(&conn.stream, &mut event).map_err(errno)?;
                    conn.watching_out = false;
                    Self::watch_out(&self.epoll, &mut conn, token)
                });
                match kept {
                    Ok(()) => {
                        self.stripes[peer].extra[stream - 1] = Some(Extra {
                            conn,
                            connected: true,
                            up: true,
                            ended: None,
                        })
                    }
                    // Not the link's end (`crate::stripe`): stream 0 may still hold the peer's
                    // last packets; without this stream, packets go whole on stream 0.
                    Err(_) => {
                        let _ = self.epoll.delete(&conn.stream);
                    }
                }
            }
            Verdict::Reject { .. } => {
                encode_header(&mut answer, Kind::Reject, 0);
                let _ = conn.send(&answer);
                let _ = self.epoll.delete(&conn.stream);
                self.stats.rejected += 1;
            }
            Verdict::Refuse(_) => {
                let _ = self.epoll.delete(&conn.stream);
                self.stats.refused += 1;
            }
        }
    }
}
