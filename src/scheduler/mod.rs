//! The scheduling core: a pure function from a snapshot and `now` to decisions.
