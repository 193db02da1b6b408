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
    /// Bumped whenever run assignments may have changed (relayed from `NOTIFY tranche_assign`
    /// by [`crate::runs::service::spawn`]); agents' long polls wait on it.
    pub assignments: Arc<tokio::sync::watch::Sender<u64>>,
    /// The last desired-state fingerprint answered to each agent session on this replica, so a
    /// sync with nothing new waits (long poll) instead of answering at once.
    pub agent_answers: Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>,
}

impl AppState {
    /// State over `pool` with `site` settings and an empty tree cache.
    pub fn new(pool: PgPool, site: Site) -> Self {
        Self {
            pool,
            site: Arc::new(site),
            tree_cache: Arc::default(),
            assignments: Arc::new(tokio::sync::watch::Sender::new(0)),
            agent_answers: Arc::default(),
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
