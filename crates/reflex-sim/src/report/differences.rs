//! The fixed part of the reproduction report: modelling choices where the papers are silent and
//! the known reasons for differences from the published numbers.

/// Markdown appended to every report.
pub const TEXT: &str = "## Differences from the papers and why

- **Topologies.** The papers' random networks are not published. Ours follow the usual rule of
  the group (random pairing of the 4 switch ports of 8-port switches, connected, no parallel
  links); averages over other random draws differ a little from Table 1.
- **Long paths (%)** come out higher than Paper A's (e.g. about 40% vs 26% for UD_BFS at 64
  switches) while the ordering UD_DFS < UD_BFS holds. Paper A's definition or denominator is not
  fully stated (we divide by N², which fits its 9-switch roundings) and the generator differs.
- **Crossing paths** depend on which of several equal shortest paths a deterministic table keeps,
  which Paper A does not say. We use the least-loaded choice (the same tables drive the
  simulator), which spreads load and gives lower absolute values than the published ones; the
  UD_DFS/UD_BFS reduction is what is compared.
- **Restrictions per node** for 32-switch UD_DFS: the published 2.821 is probably a typo for 2.812
  (2.821 x 32 is not an integer); Paper A's text example (30 restrictions) and Table 1 (32)
  disagree for the 9-switch network.
- **Timing and buffers.** 150 ns routing (24 cycles) then 6.25 ns per 1-byte flit; one header per
  cycle per switch arbiter, round-robin, a failed attempt waits for its next turn. Buffer size
  (80 flits, a Myrinet slack buffer), link delay (1 cycle), the injection process (Bernoulli per
  cycle) and run lengths are our choices; the papers do not state them. Absolute throughputs are
  given in flits/cycle/host (multiply by 4/6.25 for flits/ns/switch); ratios are compared.
- **Local traffic**: Paper A's 'up to 5 links to reach the destination host' is read as 5 links
  including the two host links, i.e. destinations within 3 switch-to-switch hops (with 5 switch
  hops almost every destination of a 32-switch network is local and the pattern is uniform).
  Even so, in our random 32-switch networks most switches lie within 3 hops, so the pattern
  stays close to uniform and the UD_DFS gain stays close to the uniform one instead of dropping
  to Paper A's +15%; Paper A's networks or its reading of the radius must be more local.
- **Throughput** is the largest accepted traffic of a sweep (coarse, then refined near the peak),
  on the topology whose UD_DFS/UD_BFS crossing-path ratio is the median of the Table 1 draws (the
  papers plot the topology with 'average behaviour'). One topology per size in quick mode, three
  in full mode, so the ratios are noisier than a 10-topology average.
- **Paper B** gives no switching technique, ports or throughput units; we use VCT, 16-flit
  packets, 8-port switches and distributed tables with all shortest legal paths. Its GA uses
  simulated throughput as fitness; ours uses the maximum channel load with even path splitting
  (cheap and deterministic, so the exhaustive optimum is well defined). The simulated throughput of
  the GA orientation can therefore land slightly below MDST/POST on a network where the proxy and
  the simulation disagree; the report counts those cases.
- **Paper C** leaves PPR's internals, control-message costs, the load and buffer sizes out. Our
  PPR is a full-reversal version with removal-before-addition updates, verified at every step by
  the union CDG check; control messages are delays (40 cycles per hop, 100 per switch) in separate
  control buffers. Reconfiguration time is measured from the change to the last table update,
  which for the dynamic scheme includes PPR's reversal rounds (they start only when the TT root
  has the topology, as Paper C says, and each waits for a drain interval) and a final refresh of
  the escape tables. With these assumed costs our dynamic scheme takes *longer* than static (the
  paper reports the opposite, Fig. 7); what it gains is that traffic never stops and far fewer
  packets are discarded. The static stop in our model lasts hundreds of cycles, not the
  several thousands of the paper, because our per-message costs are small.
- **Paper B at 48 and 64 switches** has no table, only the largest gains in the prose (up to
  +24% / +80% over MDST / POST at 48 switches, +58% / +78% at 64); our largest ratios are put
  next to those, over fewer networks (1 per size in quick mode, 5 in full mode).
- **Not reproduced**: Paper A's Fig. 4 example network (not published as data); POST timing is
  modelled by random link delays.
";
