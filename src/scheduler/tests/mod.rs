//! Unit, scenario and property tests of the core.
