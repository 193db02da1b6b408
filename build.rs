//! Rebuilds when a migration is added or changed: `sqlx::migrate!` embeds the `migrations`
//! folder at compile time, and cargo does not otherwise watch it (the sqlx documentation's
//! advice).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
