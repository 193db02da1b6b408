//! Accounts, roles and who may do what; sessions, API tokens and CSRF protection.

pub mod csrf;
pub mod ldap;
pub mod oidc;
pub mod password;
pub mod secrets;
pub mod sso;
pub mod throttle;
pub mod tls;
pub mod tokens;

use std::collections::HashMap;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use sqlx::PgPool;
use tower_sessions::Session;

use crate::error::{ApiError, AppError};
use crate::state::AppState;

/// A role, as stored in `role_grants.role`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Whole installation.
    Admin,
    /// Whole organisation, read-only.
    Finance,
    /// A tree node and its subtree.
    Lead,
    /// Member of projects.
    Researcher,
}

impl Role {
    /// Parses `admin`, `finance`, `lead` or `researcher`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "admin" => Some(Self::Admin),
            "finance" => Some(Self::Finance),
            "lead" => Some(Self::Lead),
            "researcher" => Some(Self::Researcher),
            _ => None,
        }
    }
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Finance => "finance",
            Self::Lead => "lead",
            Self::Researcher => "researcher",
        }
    }
}

/// One role held by a user; `node_id` is set for leads.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Grant {
    /// The grant's id.
    pub id: i64,
    /// The role.
    pub role: Role,
    /// For a lead, the tree node they lead.
    pub node_id: Option<i64>,
}

/// The signed-in user with their roles and project memberships.
#[derive(Clone, Debug)]
pub struct Account {
    /// User id.
    pub id: i64,
    /// User name.
    pub name: String,
    /// Roles held.
    pub grants: Vec<Grant>,
    /// Project node ids the user is a member of.
    pub projects: Vec<i64>,
    /// Bumped when the password changes; sessions from before are no longer valid.
    pub session_epoch: i32,
    /// The interface language the user chose on the Account page, if any.
    pub language: Option<crate::i18n::Lang>,
    /// The program tree's change counter, read with the account (one round trip fewer for a
    /// request that needs the tree: see [`crate::state::AppState::tree_for`]).
    pub tree_version: i64,
}

/// The columns [`Account::from_row`] reads, from `users u`.
const ACCOUNT_COLUMNS: &str = "u.id, u.name, \
    coalesce(array(SELECT g.id FROM role_grants g WHERE g.user_id = u.id ORDER BY g.role, g.node_id), '{}'), \
    coalesce(array(SELECT g.role FROM role_grants g WHERE g.user_id = u.id ORDER BY g.role, g.node_id), '{}'), \
    coalesce(array(SELECT g.node_id FROM role_grants g WHERE g.user_id = u.id ORDER BY g.role, g.node_id), '{}'), \
    coalesce(array(SELECT DISTINCT m.project_id FROM project_members m WHERE m.user_id = u.id ORDER BY m.project_id), '{}'), \
    u.session_epoch, u.language, \
    coalesce((SELECT c.version FROM change_counters c WHERE c.name = 'tree'), 0)";

/// A user row with grant ids, roles and lead nodes as parallel arrays, project ids, and the
/// tree's version.
type AccountRow = (
    i64,
    String,
    Vec<i64>,
    Vec<String>,
    Vec<Option<i64>>,
    Vec<i64>,
    i32,
    Option<String>,
    i64,
);

/// Parent links of the whole tree (node id -> parent id), for scope checks.
#[derive(Clone, Debug, Default)]
pub struct Parents(pub HashMap<i64, Option<i64>>);

impl Parents {
    /// Loads all parent links (archived nodes included).
    ///
    /// # Errors
    /// Database errors.
    pub async fn load(db: impl sqlx::PgExecutor<'_>) -> Result<Self, sqlx::Error> {
        let rows: Vec<(i64, Option<i64>)> = sqlx::query_as("SELECT id, parent_id FROM tree_nodes")
            .fetch_all(db)
            .await?;
        Ok(Self(rows.into_iter().collect()))
    }

    /// Whether `ancestor` is `node` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, ancestor: i64, node: i64) -> bool {
        let mut cur = Some(node);
        let mut steps = 0;
        while let Some(n) = cur {
            if n == ancestor {
                return true;
            }
            cur = self.0.get(&n).copied().flatten();
            steps += 1;
            if steps > 10_000 {
                return false;
            }
        }
        false
    }
}

impl Account {
    /// Loads a user's account; `None` for unknown or disabled users.
    ///
    /// # Errors
    /// Database errors.
    pub async fn load(pool: &PgPool, user_id: i64) -> Result<Option<Self>, sqlx::Error> {
        // One round trip: this runs on every request.
        let row: Option<AccountRow> = sqlx::query_as(&format!(
            "SELECT {ACCOUNT_COLUMNS} FROM users u WHERE u.id = $1 AND NOT u.disabled"
        ))
        .bind(user_id)
        .fetch_optional(pool)
        .await?;
        Ok(row.map(Self::from_row))
    }

    /// Loads the account of an API token's user by the token's SHA-256, in one query: `None`
    /// for unknown or revoked tokens and disabled users. Also returns the token's id and
    /// whether its `last_used_at` is over a minute old.
    ///
    /// # Errors
    /// Database errors.
    pub(crate) async fn load_by_token(
        pool: &PgPool,
        token_sha256: &[u8],
    ) -> Result<Option<(Self, i64, bool)>, sqlx::Error> {
        #[expect(clippy::type_complexity, reason = "the token's id and age, then an AccountRow")]
        let row: Option<(
            i64,
            bool,
            i64,
            String,
            Vec<i64>,
            Vec<String>,
            Vec<Option<i64>>,
            Vec<i64>,
            i32,
            Option<String>,
            i64,
        )> =
            sqlx::query_as(&format!(
                "SELECT t.id, t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute', {ACCOUNT_COLUMNS} \
                 FROM api_tokens t JOIN users u ON u.id = t.user_id \
                 WHERE t.token_sha256 = $1 AND t.revoked_at IS NULL AND NOT u.disabled"
            ))
            .bind(token_sha256)
            .fetch_optional(pool)
            .await?;
        Ok(row.map(
            |(token, stale, id, name, grant_ids, roles, nodes, projects, epoch, language, tree)| {
                (
                    Self::from_row((
                        id, name, grant_ids, roles, nodes, projects, epoch, language, tree,
                    )),
                    token,
                    stale,
                )
            },
        ))
    }

    fn from_row(
        (id, name, grant_ids, roles, nodes, projects, session_epoch, language, tree_version): AccountRow,
    ) -> Self {
        Self {
            id,
            name,
            grants: grant_ids
                .into_iter()
                .zip(roles)
                .zip(nodes)
                .filter_map(|((id, role), node_id)| {
                    Some(Grant {
                        id,
                        role: Role::parse(&role)?,
                        node_id,
                    })
                })
                .collect(),
            projects,
            session_epoch,
            language: language.as_deref().and_then(crate::i18n::Lang::parse),
            tree_version,
        }
    }

    /// Whether the user holds `role` anywhere.
    pub fn has(&self, role: Role) -> bool {
        self.grants.iter().any(|g| g.role == role)
    }

    /// Admin of the installation.
    pub fn is_admin(&self) -> bool {
        self.has(Role::Admin)
    }

    /// Sees the whole organisation read-only (admin or finance).
    pub fn sees_everything(&self) -> bool {
        self.is_admin() || self.has(Role::Finance)
    }

    /// The tree nodes the user leads.
    pub fn lead_nodes(&self) -> impl Iterator<Item = i64> + '_ {
        self.grants
            .iter()
            .filter(|g| g.role == Role::Lead)
            .filter_map(|g| g.node_id)
    }

    /// Whether the user may manage `node` (admin, or lead of it or an ancestor).
    pub fn leads(&self, node: i64, parents: &Parents) -> bool {
        self.is_admin()
            || self
                .lead_nodes()
                .any(|l| parents.is_ancestor_or_self(l, node))
    }

    /// Whether the user may manage `node` from strictly above (admin, or lead of an ancestor):
    /// needed for budgets, which a lead sets for the nodes under them, not for their own.
    pub fn leads_strictly_above(&self, node: i64, parents: &Parents) -> bool {
        self.is_admin()
            || self
                .lead_nodes()
                .any(|l| l != node && parents.is_ancestor_or_self(l, node))
    }

    /// Whether the user may read `node`'s details (budget, members): everything for admin and
    /// finance, a lead's subtree, a researcher's own projects.
    pub fn may_view(&self, node: i64, parents: &Parents) -> bool {
        self.sees_everything() || self.leads(node, parents) || self.projects.contains(&node)
    }

    /// Whether `node` is in the user's view of the tree at all, by name: everything for admin
    /// and finance; otherwise the subtrees of the nodes they lead and their projects, plus the
    /// ancestors of those (for context). A node outside it is answered as a missing one.
    pub fn sees_node(&self, node: i64, parents: &Parents) -> bool {
        self.sees_everything()
            || self
                .lead_nodes()
                .chain(self.projects.iter().copied())
                .any(|s| {
                    parents.is_ancestor_or_self(s, node) || parents.is_ancestor_or_self(node, s)
                })
    }

    /// The roles as names, sorted and deduplicated.
    pub fn role_names(&self) -> Vec<&'static str> {
        let mut r: Vec<_> = self.grants.iter().map(|g| g.role.as_str()).collect();
        r.sort_unstable();
        r.dedup();
        r
    }
}

/// Session key holding the signed-in user's id.
pub const SESSION_USER: &str = "user_id";
/// Session key holding the user's session epoch at sign-in.
pub const SESSION_EPOCH: &str = "epoch";
/// Session key holding, for external accounts, the Unix second the session ends at however
/// active it is ([`sso::Sso::external_session_max_s`]).
pub const SESSION_UNTIL: &str = "until";

/// Extractor for pages: the signed-in user, or a redirect to the login page.
pub struct CurrentUser(pub Account);

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        // Not signed in: to the login page, coming back here afterwards.
        let to_login = |parts: &Parts| {
            let next = if parts.method == axum::http::Method::GET {
                parts.uri.path_and_query().map_or("/", |p| p.as_str())
            } else {
                "/"
            };
            let query = serde_urlencoded::to_string([("next", next)]).unwrap_or_default();
            Redirect::to(&format!("/login?{query}")).into_response()
        };
        let internal =
            |e: tower_sessions::session::Error| AppError::Internal(e.into()).into_response();
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|_| to_login(parts))?;
        let Some(user_id) = session.get::<i64>(SESSION_USER).await.map_err(internal)? else {
            return Err(to_login(parts));
        };
        let epoch = session.get::<i32>(SESSION_EPOCH).await.map_err(internal)?;
        if let Some(until) = session.get::<i64>(SESSION_UNTIL).await.map_err(internal)?
            && jiff::Timestamp::now().as_second() >= until
        {
            // An external account's session past its maximum age: sign in again, which
            // re-applies the identity provider's groups.
            session.flush().await.map_err(internal)?;
            return Err(to_login(parts));
        }
        match Account::load(&state.pool, user_id)
            .await
            .map_err(|e| AppError::from(e).into_response())?
        {
            Some(account) if Some(account.session_epoch) == epoch => {
                if let Some(lang) = account.language {
                    crate::i18n::set_current(lang);
                }
                Ok(Self(account))
            }
            _ => {
                // Unknown, disabled, or the password changed since this session began.
                session.flush().await.map_err(internal)?;
                Err(to_login(parts))
            }
        }
    }
}

/// The token of an `Authorization: Bearer TOKEN` header (scheme case-insensitive), if any.
pub fn bearer(parts: &Parts) -> Option<&str> {
    let header = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    header
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("bearer "))
        .map(|_| header[7..].trim())
        .filter(|t| !t.is_empty())
}

/// `bytes` random bytes from the thread's CSPRNG, hex-encoded (so `2 * bytes` characters): the
/// secret part of tokens, sessions and one-time form keys.
#[must_use]
pub fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut buf = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

/// Extractor for the API: the user of the `Authorization: Bearer TOKEN` header.
pub struct ApiUser(pub Account);

impl FromRequestParts<AppState> for ApiUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = bearer(parts).ok_or(ApiError(AppError::BadToken { agent: false }))?;
        let account = tokens::account_for_token(&state.pool, token)
            .await?
            .ok_or(ApiError(AppError::BadToken { agent: false }))?;
        Ok(Self(account))
    }
}
