//! Tranche: a self-hosted portal that decides who gets a research organisation's GPUs.
//!
//! The crate is a library with a thin binary (`src/main.rs`). Folders follow the architecture:
//! `scheduler` is the pure scheduling core (no I/O, no clock), `sim` replays job traces through
//! it, `db` holds the PostgreSQL access and the embedded cluster, `auth` accounts and sessions,
//! `web` the pages and the JSON API.

pub mod scheduler;
pub mod sim;
