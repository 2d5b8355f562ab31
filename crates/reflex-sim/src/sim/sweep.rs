//! Injection-rate sweeps (placeholder replaced below).
