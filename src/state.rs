//! State shared by every request handler.

use std::sync::Arc;

use sqlx::PgPool;

use crate::config::Site;
use crate::db::tree::{self, TreeCache, TreeView};

/// What handlers need: the pool, the site settings and the tree cache. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The PostgreSQL pool.
    pub pool: PgPool,
    /// Currency, time zone, cookie policy.
    pub site: Arc<Site>,
    /// The computed program tree, revalidated against the database on every read.
    pub tree_cache: Arc<TreeCache>,
}

impl AppState {
    /// State over `pool` with `site` settings and an empty tree cache.
    pub fn new(pool: PgPool, site: Site) -> Self {
        Self {
            pool,
            site: Arc::new(site),
            tree_cache: Arc::default(),
        }
    }

    /// The program tree for the current budget period (cached while unchanged).
    ///
    /// # Errors
    /// Database errors.
    pub async fn tree(&self) -> Result<Arc<TreeView>, sqlx::Error> {
        tree::load_cached(
            &self.pool,
            &self.tree_cache,
            jiff::Timestamp::now(),
            &self.site.time_zone,
        )
        .await
    }
}
