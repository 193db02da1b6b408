//! Users and their roles: creation, passwords, grants. Changes are audited; the actor is
//! `None` when the command line or the first-run set-up makes them.

use serde_json::json;
use sqlx::PgPool;

use crate::auth::{Role, password};
use crate::db::audit::{self, Change};
use crate::domain;
use crate::error::AppError;
use crate::i18n::{t, t1};

/// A user with their grants, for the admin page and API.
#[derive(Clone, Debug, serde::Serialize)]
pub struct UserRow {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Whether the account is disabled: no sign-in, no API token, no mail.
    pub disabled: bool,
    /// Grants (id, role, lead node id and name).
    pub grants: Vec<GrantRow>,
}

/// One grant as listed.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct GrantRow {
    /// Grant id.
    pub id: i64,
    /// User id.
    #[serde(skip)]
    pub user_id: i64,
    /// Role name.
    pub role: String,
    /// Lead node id.
    pub node_id: Option<i64>,
    /// Lead node name.
    pub node_name: Option<String>,
    /// `manual` (given by hand) or `idp` (from the identity provider's mapping rules).
    pub source: String,
}

/// All users with their grants, by name.
///
/// # Errors
/// Database errors.
pub async fn list(pool: &PgPool) -> Result<Vec<UserRow>, sqlx::Error> {
    let users: Vec<(i64, String, bool)> =
        sqlx::query_as("SELECT id, name, disabled FROM users ORDER BY name")
            .fetch_all(pool)
            .await?;
    let grants: Vec<GrantRow> = sqlx::query_as(
        "SELECT g.id, g.user_id, g.role, g.node_id, t.name AS node_name, g.source FROM role_grants g \
         LEFT JOIN tree_nodes t ON t.id = g.node_id ORDER BY g.role, t.name",
    )
    .fetch_all(pool)
    .await?;
    Ok(users
        .into_iter()
        .map(|(id, name, disabled)| UserRow {
            id,
            name,
            disabled,
            grants: grants.iter().filter(|g| g.user_id == id).cloned().collect(),
        })
        .collect())
}

/// Resolves a lead's node by name; `None` when not a lead.
async fn lead_node(
    tx: &mut sqlx::PgConnection,
    role: Role,
    node: Option<&str>,
) -> Result<Option<i64>, AppError> {
    match (role, node.map(str::trim).filter(|n| !n.is_empty())) {
        (Role::Lead, Some(name)) => Ok(Some(
            sqlx::query_scalar(
                "SELECT id FROM tree_nodes WHERE lower(name) = lower($1) AND NOT archived",
            )
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| {
                AppError::NotFound(t1("users-no-such-node", "name", crate::domain::quote(name)))
            })?,
        )),
        (Role::Lead, None) => Err(AppError::invalid("node", t("users-lead-needs-node"))),
        (_, Some(_)) => Err(AppError::invalid("node", t("users-only-lead-node"))),
        (_, None) => Ok(None),
    }
}

/// Creates a user with one role and a generated password; returns (id, password).
///
/// # Errors
/// Invalid name, duplicate name, unknown role or lead node.
pub async fn create(
    pool: &PgPool,
    actor: Option<i64>,
    name: &str,
    role: &str,
    node: Option<&str>,
) -> Result<(i64, String), AppError> {
    let name = domain::ident(name, "user", 64).map_err(|m| AppError::invalid("name", m))?;
    let role = Role::parse(role).ok_or_else(|| {
        AppError::invalid(
            "role",
            t1("users-bad-role", "got", crate::domain::quote(role.trim())),
        )
    })?;
    let pw = password::generate();
    let hash = password::hash(&pw)?;
    let mut tx = pool.begin().await?;
    let taken: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users WHERE lower(name) = lower($1))")
            .bind(&name)
            .fetch_one(&mut *tx)
            .await?;
    if taken {
        return Err(AppError::invalid(
            "name",
            t1("users-exists", "name", crate::domain::quote(&name)),
        ));
    }
    let node_id = lead_node(&mut tx, role, node).await?;
    let id: i64 =
        sqlx::query_scalar("INSERT INTO users (name, password_hash) VALUES ($1, $2) RETURNING id")
            .bind(&name)
            .bind(&hash)
            .fetch_one(&mut *tx)
            .await?;
    sqlx::query("INSERT INTO role_grants (user_id, role, node_id) VALUES ($1, $2, $3)")
        .bind(id)
        .bind(role.as_str())
        .bind(node_id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor,
            action: "user.create",
            entity: "user",
            entity_id: Some(id),
            node_id,
            before: None,
            after: Some(json!({"name": name, "role": role.as_str(), "node_id": node_id})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok((id, pw))
}

/// Sets a user's password (found by name).
///
/// # Errors
/// NotFound user, Invalid (too short or long).
pub async fn set_password(
    pool: &PgPool,
    actor: Option<i64>,
    name: &str,
    new_password: &str,
) -> Result<(), AppError> {
    password::check_new(new_password).map_err(|m| AppError::invalid("password", m))?;
    let hash = password::hash(new_password)?;
    let mut tx = pool.begin().await?;
    let id: i64 =
        sqlx::query_scalar("UPDATE users SET password_hash = $1, session_epoch = session_epoch + 1 WHERE name = $2 RETURNING id")
            .bind(&hash)
            .bind(name.trim())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| {
                AppError::NotFound(t1("users-no-such-user", "name", crate::domain::quote(name.trim())))
            })?;
    audit::record(
        &mut *tx,
        Change {
            actor,
            action: "user.password",
            entity: "user",
            entity_id: Some(id),
            node_id: None,
            before: None,
            after: Some(json!({"name": name.trim(), "password": "changed"})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Grants a role to a user (by id).
///
/// # Errors
/// NotFound user, Invalid role/node, Invalid when already granted.
pub async fn grant(
    pool: &PgPool,
    actor: Option<i64>,
    user_id: i64,
    role: &str,
    node: Option<&str>,
) -> Result<i64, AppError> {
    let role = Role::parse(role).ok_or_else(|| {
        AppError::invalid(
            "role",
            t1("users-bad-role", "got", crate::domain::quote(role.trim())),
        )
    })?;
    let mut tx = pool.begin().await?;
    let name: String = sqlx::query_scalar("SELECT name FROM users WHERE id = $1 FOR UPDATE")
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| AppError::NotFound(t1("users-not-found", "id", user_id.to_string())))?;
    let node_id = lead_node(&mut tx, role, node).await?;
    let id: Option<i64> = sqlx::query_scalar(
        "INSERT INTO role_grants (user_id, role, node_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING id",
    )
    .bind(user_id)
    .bind(role.as_str())
    .bind(node_id)
    .fetch_optional(&mut *tx)
    .await?;
    let id = id.ok_or_else(|| AppError::invalid("role", t1("users-has-role", "name", &name)))?;
    audit::record(
        &mut *tx,
        Change {
            actor,
            action: "user.grant",
            entity: "user",
            entity_id: Some(user_id),
            node_id,
            before: None,
            after: Some(json!({"name": name, "role": role.as_str(), "node_id": node_id})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Revokes a grant. The last admin grant cannot be revoked, nor the break-glass admin's last
/// admin grant given by hand while password sign-in is off.
///
/// # Errors
/// NotFound grant, Invalid for the last admin, Conflict for the break-glass admin's.
pub async fn revoke(
    pool: &PgPool,
    actor: Option<i64>,
    user_id: i64,
    grant_id: i64,
) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    serialize_admin_changes(&mut tx).await?;
    let (role, node_id, name, manual): (String, Option<i64>, String, bool) = sqlx::query_as(
        "SELECT g.role, g.node_id, u.name, g.source = 'manual' FROM role_grants g JOIN users u ON u.id = g.user_id WHERE g.id = $1 AND g.user_id = $2",
    )
    .bind(grant_id)
    .bind(user_id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| {
        AppError::NotFound(crate::i18n::t2(
            "users-grant-not-found",
            "grant",
            grant_id.to_string(),
            "user",
            user_id.to_string(),
        ))
    })?;
    if role == "admin" {
        // The enabled admins left once this grant is gone (a disabled account's grant leaves
        // as many as there are; found by a new-user check, refused as the last admin's).
        let left: i64 = sqlx::query_scalar(&format!("{ENABLED_ADMINS} AND g.id <> $1"))
            .bind(grant_id)
            .fetch_one(&mut *tx)
            .await?;
        if left == 0 {
            return Err(AppError::invalid("role", t("users-last-admin")));
        }
        // The break-glass admin keeps a hand-given admin grant (docs/sso.md), or no one could
        // administer the site while password sign-in is off.
        let others: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM role_grants WHERE user_id = $1 AND role = 'admin' AND source = 'manual' AND id <> $2",
        )
        .bind(user_id)
        .bind(grant_id)
        .fetch_one(&mut *tx)
        .await?;
        if manual && others == 0 && break_glass_admin(&mut *tx).await? == Some(user_id) {
            return Err(AppError::Conflict(t1(
                "users-disable-break-glass",
                "name",
                &name,
            )));
        }
    }
    sqlx::query("DELETE FROM role_grants WHERE id = $1")
        .bind(grant_id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor,
            action: "user.revoke",
            entity: "user",
            entity_id: Some(user_id),
            node_id,
            before: Some(json!({"name": name, "role": role, "node_id": node_id})),
            after: None,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Serialises revocations and disablings, so two admins cannot remove or disable each other
/// at once (each checks that another enabled admin is left).
async fn serialize_admin_changes(tx: &mut sqlx::PgConnection) -> Result<(), sqlx::Error> {
    sqlx::query("LOCK TABLE role_grants IN SHARE ROW EXCLUSIVE MODE")
        .execute(tx)
        .await?;
    Ok(())
}

/// How many enabled accounts hold an admin grant.
const ENABLED_ADMINS: &str = "SELECT count(DISTINCT g.user_id) FROM role_grants g \
     JOIN users u ON u.id = g.user_id WHERE g.role = 'admin' AND NOT u.disabled";

/// Disables an account (`disabled = true`: its sessions end, its API tokens and sign-in are
/// refused, it gets no mail) or enables it again; its grants, tokens and history stay.
/// Audited as `user.disable` / `user.enable`; no change, no entry.
///
/// # Errors
/// NotFound for an unknown user; Conflict (409) for disabling oneself, the last enabled
/// admin, or the break-glass admin while password sign-in is off for everyone else.
pub async fn set_disabled(
    pool: &PgPool,
    actor: Option<i64>,
    user_id: i64,
    disabled: bool,
) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    serialize_admin_changes(&mut tx).await?;
    let (name, was): (String, bool) =
        sqlx::query_as("SELECT name, disabled FROM users WHERE id = $1 FOR UPDATE")
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| AppError::NotFound(t1("users-not-found", "id", user_id.to_string())))?;
    if was == disabled {
        return Ok(());
    }
    if disabled {
        if actor == Some(user_id) {
            return Err(AppError::Conflict(t("users-disable-self")));
        }
        if break_glass_admin(&mut *tx).await? == Some(user_id) {
            return Err(AppError::Conflict(t1(
                "users-disable-break-glass",
                "name",
                &name,
            )));
        }
        let admin: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM role_grants WHERE user_id = $1 AND role = 'admin')",
        )
        .bind(user_id)
        .fetch_one(&mut *tx)
        .await?;
        let admins: i64 = sqlx::query_scalar(ENABLED_ADMINS)
            .fetch_one(&mut *tx)
            .await?;
        if admin && admins <= 1 {
            return Err(AppError::Conflict(t("users-last-admin")));
        }
    }
    // Disabling ends the account's sessions (their epoch no longer matches).
    sqlx::query(
        "UPDATE users SET disabled = $2, \
         session_epoch = session_epoch + CASE WHEN $2 THEN 1 ELSE 0 END WHERE id = $1",
    )
    .bind(user_id)
    .bind(disabled)
    .execute(&mut *tx)
    .await?;
    // And its API tokens: enabling the account again does not bring back a token that may
    // have leaked (the user makes new ones).
    let revoked = if disabled {
        sqlx::query(
            "UPDATE api_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL",
        )
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
    } else {
        0
    };
    audit::record(
        &mut *tx,
        Change {
            actor,
            action: if disabled {
                "user.disable"
            } else {
                "user.enable"
            },
            entity: "user",
            entity_id: Some(user_id),
            node_id: None,
            before: Some(json!({"name": name, "disabled": was})),
            after: Some(if disabled {
                json!({"name": name, "disabled": disabled, "tokens_revoked": revoked})
            } else {
                json!({"name": name, "disabled": disabled})
            }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// First run: with no users at all, creates `admin` with a generated password and returns it
/// (to print once). Returns `None` when users exist. Also makes sure a root node exists.
///
/// # Errors
/// Database errors.
pub async fn first_run(pool: &PgPool) -> Result<Option<String>, AppError> {
    let mut tx = pool.begin().await?;
    sqlx::query("LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let root_exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM tree_nodes WHERE parent_id IS NULL)")
            .fetch_one(&mut *tx)
            .await?;
    if !root_exists {
        sqlx::query("INSERT INTO tree_nodes (name, share_bp) VALUES ('Organisation', 10000)")
            .execute(&mut *tx)
            .await?;
    }
    let any: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users)")
        .fetch_one(&mut *tx)
        .await?;
    if any {
        tx.commit().await?;
        return Ok(None);
    }
    let pw = password::generate();
    let hash = password::hash(&pw)?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO users (name, password_hash) VALUES ('admin', $1) RETURNING id",
    )
    .bind(&hash)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query("INSERT INTO role_grants (user_id, role) VALUES ($1, 'admin')")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: None,
            action: "user.create",
            entity: "user",
            entity_id: Some(id),
            node_id: None,
            before: None,
            after: Some(json!({"name": "admin", "role": "admin", "first_run": true})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(Some(pw))
}

/// Whether `email` is a plain address, as the API document's pattern says: a local part of
/// letters, digits and ``.!#$%&'*+/=?^_`{|}~-``, `@`, and a domain of two or more dot-separated
/// labels of letters, digits and `-` (ASCII; no quoted local part, no space). The mail library
/// alone took `"a b"@b.co`, which the database's check then refused.
fn plain_address(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    let labels: Vec<&str> = domain.split('.').collect();
    !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".!#$%&'*+/=?^_`{|}~-".contains(c))
        && labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// Sets (or, with an empty string, clears) a user's e-mail address for budget alerts.
///
/// # Errors
/// Invalid address; database errors.
pub async fn set_email(pool: &PgPool, user_id: i64, email: &str) -> Result<(), AppError> {
    let email = email.trim();
    let value = if email.is_empty() {
        None
    } else {
        if email.len() > 254 || !plain_address(email) || email.parse::<lettre::Address>().is_err() {
            return Err(AppError::invalid(
                "email",
                t1("account-err-email", "email", crate::domain::quote(email)),
            ));
        }
        Some(email.to_string())
    };
    let mut tx = pool.begin().await?;
    let before: Option<String> =
        sqlx::query_scalar("SELECT email FROM users WHERE id = $1 FOR UPDATE")
            .bind(user_id)
            .fetch_one(&mut *tx)
            .await?;
    if before == value {
        return Ok(());
    }
    sqlx::query("UPDATE users SET email = $1 WHERE id = $2")
        .bind(&value)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(user_id),
            action: "user.email",
            entity: "user",
            entity_id: Some(user_id),
            node_id: None,
            before: Some(json!({"email": before})),
            after: Some(json!({"email": value})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The `site_flags` row that, present, turns local password sign-in off for everyone but the
/// break-glass admin whose user id it holds.
const LOCAL_SIGN_IN_FLAG: &str = "local_sign_in_break_glass";

/// Whether local password sign-in is off: `Some(user id)` of the break-glass admin who alone
/// may still sign in with a password, `None` when everyone with a password may.
///
/// # Errors
/// Database errors.
pub async fn break_glass_admin(db: impl sqlx::PgExecutor<'_>) -> Result<Option<i64>, sqlx::Error> {
    let value: Option<String> = sqlx::query_scalar("SELECT value FROM site_flags WHERE name = $1")
        .bind(LOCAL_SIGN_IN_FLAG)
        .fetch_optional(db)
        .await?;
    Ok(value.and_then(|v| v.parse().ok()))
}

/// Turns local password sign-in off for everyone but `break_glass` (a user name), or back on
/// for everyone (`None`). Audited as `site.local_sign_in`.
///
/// # Errors
/// Invalid when the break-glass account does not exist, is disabled, has no local password or
/// holds no admin grant given by hand (a mapped grant could vanish at the next sign-in).
pub async fn set_local_sign_in(
    pool: &PgPool,
    actor: Option<i64>,
    break_glass: Option<&str>,
) -> Result<(), AppError> {
    let mut tx = pool.begin().await?;
    let before = break_glass_admin(&mut *tx).await?;
    let after = match break_glass.map(str::trim) {
        None => None,
        Some("") => {
            return Err(AppError::invalid(
                "break_glass",
                t("users-break-glass-required"),
            ));
        }
        Some(name) => {
            let found: Option<(i64, bool, bool, bool)> = sqlx::query_as(
                "SELECT u.id, u.disabled, u.password_hash IS NOT NULL, \
                        EXISTS (SELECT 1 FROM role_grants g WHERE g.user_id = u.id AND g.role = 'admin' AND g.source = 'manual') \
                 FROM users u WHERE u.name = $1",
            )
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
            let quoted = crate::domain::quote(name);
            match found {
                None => {
                    return Err(AppError::invalid(
                        "break_glass",
                        t1("users-no-such-user", "name", &quoted),
                    ));
                }
                Some((_, true, _, _)) => {
                    return Err(AppError::invalid(
                        "break_glass",
                        t1("users-disabled", "name", &quoted),
                    ));
                }
                Some((_, _, false, _)) => {
                    return Err(AppError::invalid(
                        "break_glass",
                        t1("users-no-local-password", "name", &quoted),
                    ));
                }
                Some((_, _, _, false)) => {
                    return Err(AppError::invalid(
                        "break_glass",
                        t1("users-no-manual-admin", "name", &quoted),
                    ));
                }
                Some((id, false, true, true)) => Some(id),
            }
        }
    };
    if before == after {
        return Ok(());
    }
    match after {
        Some(id) => {
            sqlx::query(
                "INSERT INTO site_flags (name, value) VALUES ($1, $2) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value, set_at = now()",
            )
            .bind(LOCAL_SIGN_IN_FLAG)
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM site_flags WHERE name = $1")
                .bind(LOCAL_SIGN_IN_FLAG)
                .execute(&mut *tx)
                .await?;
        }
    }
    audit::record(
        &mut *tx,
        Change {
            actor,
            action: "site.local_sign_in",
            entity: "site",
            entity_id: None,
            node_id: None,
            before: Some(json!({"local_sign_in": if before.is_some() { "break-glass admin only" } else { "everyone" }, "break_glass_user_id": before})),
            after: Some(json!({"local_sign_in": if after.is_some() { "break-glass admin only" } else { "everyone" }, "break_glass_user_id": after, "break_glass": break_glass.map(str::trim)})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
