//! Table exports: per-switch tables (indexed by input port and destination), source routes
//! (port sequences per host pair, as a Myrinet host would store them) and, later, OpenSM.
