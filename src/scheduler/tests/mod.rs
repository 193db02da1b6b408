//! Unit, scenario and property tests of the core. They need no database.

mod fairshare;
mod multipass;
mod properties;
mod scenarios;
pub mod support;
