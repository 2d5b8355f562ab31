//! Measurement: offered and accepted traffic, latency, discards by cause and an optional time
//! series of fixed-width windows ("instantaneous latency", Paper C Figs. 4-5).

use std::collections::BTreeMap;

use serde::Serialize;

/// Why a packet was discarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscardCause {
    /// It was inside a switch or link that failed.
    ComponentFailure,
    /// A header found no routing option (e.g. disconnected up*/down* escape network).
    NoRoute,
    /// Flushed by static reconfiguration.
    StaticFlush,
    /// Its destination host sits on a switch that is down.
    DestinationDown,
}

impl DiscardCause {
    /// Name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            DiscardCause::ComponentFailure => "component_failure",
            DiscardCause::NoRoute => "no_route",
            DiscardCause::StaticFlush => "static_flush",
            DiscardCause::DestinationDown => "destination_down",
        }
    }
}

/// One time-series window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WindowSample {
    /// First cycle of the window.
    pub start: u64,
    /// Packets delivered in it.
    pub delivered: u64,
    /// Mean latency (cycles, generation to tail delivery) of those packets.
    pub avg_latency: f64,
    /// Flits injected in it.
    pub injected_flits: u64,
    /// Packets discarded in it.
    pub discarded: u64,
}

/// Result of one simulation run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SimResult {
    /// Offered load, flits/cycle/host (generated in the measurement window).
    pub offered: f64,
    /// Accepted traffic, flits/cycle/host (delivered in the measurement window).
    pub accepted: f64,
    /// Accepted traffic in flits/ns/switch (the unit of Paper A's group).
    pub accepted_flits_ns_switch: f64,
    /// Mean latency of packets delivered in the window, cycles (generation to tail).
    pub avg_latency: f64,
    /// The same in ns.
    pub avg_latency_ns: f64,
    /// Mean network latency (header injection to tail), cycles.
    pub avg_network_latency: f64,
    /// Largest latency seen in the window, cycles.
    pub max_latency: u64,
    /// Packets delivered in the window.
    pub delivered_packets: u64,
    /// Mean switch-to-switch hops of delivered packets.
    pub avg_hops: f64,
    /// Discarded packets by cause (whole run).
    pub discarded: BTreeMap<String, u64>,
    /// Messages dropped because a source queue was full (whole run).
    pub source_drops: u64,
    /// Cycles simulated.
    pub cycles: u64,
    /// Time series (empty unless `window_cycles > 0`).
    pub series: Vec<WindowSample>,
}

/// Accumulates measurements during a run.
#[derive(Clone, Debug)]
pub struct StatsCollector {
    start: u64,
    end: u64,
    window: u64,
    gen_flits: u64,
    del_flits: u64,
    del_packets: u64,
    lat_sum: u64,
    net_lat_sum: u64,
    hops_sum: u64,
    lat_max: u64,
    discarded: BTreeMap<String, u64>,
    source_drops: u64,
    series: Vec<(WindowSample, u64)>,
}

impl StatsCollector {
    /// Measures cycles `[start, end)`; `window > 0` also records a time series.
    pub fn new(start: u64, end: u64, window: u64) -> Self {
        StatsCollector {
            start,
            end,
            window,
            gen_flits: 0,
            del_flits: 0,
            del_packets: 0,
            lat_sum: 0,
            net_lat_sum: 0,
            hops_sum: 0,
            lat_max: 0,
            discarded: BTreeMap::new(),
            source_drops: 0,
            series: Vec::new(),
        }
    }

    fn measuring(&self, now: u64) -> bool {
        (self.start..self.end).contains(&now)
    }

    fn slot(&mut self, now: u64) -> Option<&mut (WindowSample, u64)> {
        if self.window == 0 {
            return None;
        }
        let i = (now / self.window) as usize;
        while self.series.len() <= i {
            let start = self.series.len() as u64 * self.window;
            self.series.push((
                WindowSample {
                    start,
                    ..Default::default()
                },
                0,
            ));
        }
        self.series.get_mut(i)
    }

    /// A message of `len` flits was generated.
    pub fn generated(&mut self, now: u64, len: u32) {
        if self.measuring(now) {
            self.gen_flits += u64::from(len);
        }
    }

    /// A message was dropped at a full source queue.
    pub fn source_drop(&mut self) {
        self.source_drops += 1;
    }

    /// A flit entered the network.
    pub fn injected_flit(&mut self, now: u64) {
        if let Some(s) = self.slot(now) {
            s.0.injected_flits += 1;
        }
    }

    /// A flit reached its host.
    pub fn delivered_flit(&mut self, now: u64) {
        if self.measuring(now) {
            self.del_flits += 1;
        }
    }

    /// A packet's tail reached its host.
    pub fn delivered_packet(&mut self, now: u64, created: u64, injected: u64, hops: u32) {
        let lat = now - created;
        if self.measuring(now) {
            self.del_packets += 1;
            self.lat_sum += lat;
            self.net_lat_sum += now - injected;
            self.hops_sum += u64::from(hops);
            self.lat_max = self.lat_max.max(lat);
        }
        if let Some(s) = self.slot(now) {
            s.0.delivered += 1;
            s.1 += lat;
        }
    }

    /// A packet was discarded.
    pub fn discarded(&mut self, now: u64, cause: DiscardCause) {
        *self.discarded.entry(cause.name().to_string()).or_insert(0) += 1;
        if let Some(s) = self.slot(now) {
            s.0.discarded += 1;
        }
    }

    /// Final numbers for a network of `hosts` hosts and `switches` switches after `cycles`.
    pub fn finish(&self, hosts: usize, switches: usize, cycles: u64, cycle_ns: f64) -> SimResult {
        let span = (self.end.min(cycles).saturating_sub(self.start)).max(1) as f64;
        let per_host = |x: u64| x as f64 / span / hosts.max(1) as f64;
        let dp = self.del_packets.max(1) as f64;
        let accepted = per_host(self.del_flits);
        SimResult {
            offered: per_host(self.gen_flits),
            accepted,
            accepted_flits_ns_switch: accepted * hosts as f64 / switches.max(1) as f64 / cycle_ns,
            avg_latency: self.lat_sum as f64 / dp,
            avg_latency_ns: self.lat_sum as f64 / dp * cycle_ns,
            avg_network_latency: self.net_lat_sum as f64 / dp,
            max_latency: self.lat_max,
            delivered_packets: self.del_packets,
            avg_hops: self.hops_sum as f64 / dp,
            discarded: self.discarded.clone(),
            source_drops: self.source_drops,
            cycles,
            series: self
                .series
                .iter()
                .map(|(w, lat)| WindowSample {
                    avg_latency: *lat as f64 / w.delivered.max(1) as f64,
                    ..w.clone()
                })
                .collect(),
        }
    }
}
