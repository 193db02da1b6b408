//! State shared by every request handler.

use std::sync::Arc;

use sqlx::PgPool;

use crate::auth::Account;
use crate::auth::secrets::SecretKey;
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
    /// One lock per agent session on this replica: an agent's syncs write one after another
    /// (an agent that re-sends while an earlier sync still runs must not make them queue on
    /// database row locks, each holding a pooled connection).
    pub agent_locks: Arc<AgentLocks>,
    /// Asks for a scheduling pass soon: submissions signal it after their commit, and
    /// [`crate::runs::service::spawn`]'s relay sends one `NOTIFY tranche_wake` per 20 ms at
    /// most for all of them (a NOTIFY in each submission's transaction would serialize their
    /// commits on PostgreSQL's notification lock).
    pub wake: Arc<tokio::sync::Notify>,
    /// Seals and opens run environment values marked secret ([`crate::auth::secrets`]).
    pub secret_key: Arc<SecretKey>,
    /// The Prometheus series of this process ([`crate::metrics::prom`]).
    pub metrics: Arc<crate::metrics::prom::Metrics>,
    /// Project pages' standings, each reused for at most a second
    /// ([`crate::web::project::StandingCache`]).
    pub project_cache: Arc<crate::web::project::StandingCache>,
    /// The identity provider's settings and mapping rules ([`crate::auth::sso`]).
    pub sso: Arc<crate::auth::sso::Sso>,
    /// Project pages' settings and money, each reused while the project's change counter is
    /// unchanged ([`crate::web::project::FactsCache`]).
    pub project_facts: Arc<crate::web::project::FactsCache>,
    /// The runs of the scheduling snapshot kept between passes ([`crate::runs::live`]); the
    /// lock is held for a whole pass.
    pub live_runs: Arc<tokio::sync::Mutex<crate::runs::live::LiveCache>>,
    /// Writes concurrent submissions together ([`crate::runs::batch`]).
    pub submissions: Arc<crate::runs::batch::Combiner>,
    /// The organisation's default language, reread every few seconds
    /// ([`crate::i18n::DefaultCache`]).
    pub org_language: Arc<crate::i18n::DefaultCache>,
}

/// The `(run, attempt, node)` placements an agent session reported running and this replica
/// recorded: reported running again, they need no check and no write (a placement never goes
/// back to `assigned`), so a sync's statements only handle what changed.
pub type ConfirmedRunning = std::collections::HashSet<(i64, i32, i64)>;

/// Per-session async locks for agent syncs, each guarding the session's [`ConfirmedRunning`].
#[derive(Default)]
pub struct AgentLocks(
    std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<ConfirmedRunning>>>>,
);

impl AgentLocks {
    /// The lock of `session`, created on first use (unused ones are dropped past 10,000).
    pub fn of(&self, session: &str) -> Arc<tokio::sync::Mutex<ConfirmedRunning>> {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.len() > 10_000 {
            map.retain(|_, lock| Arc::strong_count(lock) > 1);
        }
        map.entry(session.to_string()).or_default().clone()
    }

    /// How many sessions have a lock kept.
    pub fn len(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// Whether no session has a lock kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl AppState {
    /// State over `pool` with `site` settings, an empty tree cache and a random secret key
    /// kept in memory only (`tranche serve` sets the server's own with
    /// [`AppState::with_secret_key`]).
    pub fn new(pool: PgPool, site: Site) -> Self {
        Self {
            pool,
            site: Arc::new(site),
            tree_cache: Arc::default(),
            assignments: Arc::new(tokio::sync::watch::Sender::new(0)),
            agent_locks: Arc::default(),
            wake: Arc::default(),
            secret_key: Arc::new(SecretKey::random()),
            metrics: Arc::default(),
            project_cache: Arc::default(),
            sso: Arc::default(),
            project_facts: Arc::default(),
            live_runs: Arc::default(),
            submissions: Arc::default(),
            org_language: Arc::default(),
        }
    }

    /// The same state with `key` for sealed values.
    #[must_use]
    pub fn with_secret_key(mut self, key: SecretKey) -> Self {
        self.secret_key = Arc::new(key);
        self
    }

    /// The same state with these identity-provider settings.
    #[must_use]
    pub fn with_sso(mut self, sso: crate::auth::sso::Sso) -> Self {
        self.sso = Arc::new(sso);
        self
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
            &self.site.periods,
        )
        .await
    }

    /// The program tree at the version read with `account` ([`Account::tree_version`]): the
    /// same as [`Self::tree`] without reading the counter again.
    ///
    /// # Errors
    /// Database errors.
    pub async fn tree_for(&self, account: &Account) -> Result<Arc<TreeView>, sqlx::Error> {
        tree::load_at_version(
            &self.pool,
            &self.tree_cache,
            account.tree_version,
            jiff::Timestamp::now(),
            &self.site.periods,
        )
        .await
    }
}
