//! Integration tests: one binary, a fresh PostgreSQL database per test.

mod access;
mod accounts;
mod ai;
mod api;
mod audit;
mod browser;
mod contracts;
mod embedded;
mod hardening;
mod i18n;
mod incremental;
mod live;
mod mail;
mod metrics;
mod oidc;
mod openapi;
mod ops;
mod reports;
mod run_pages;
mod runs;
mod secrets;
mod slurm;
mod slurm_cluster;
mod sso;
mod support;
mod tree;
