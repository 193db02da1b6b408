//! State shared by every request handler.

use sqlx::PgPool;

use crate::config::Site;

/// What handlers need: the pool and the site settings. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The PostgreSQL pool.
    pub pool: PgPool,
    /// Currency, time zone, cookie policy.
    pub site: std::sync::Arc<Site>,
}
