//! Sign-in through the organisation's identity provider: the settings, the mapping rules that
//! turn the provider's groups into Tranche grants, and applying them at each sign-in
//! (docs/sso.md).
//!
//! Mapped grants and memberships carry `source = 'idp'` and are kept apart from those given
//! by hand (`source = 'manual'`): every sign-in replaces the mapped set with what the rules
//! give now and leaves the hand-given ones alone. Each change is audited with the cause
//! "from the identity provider".

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::json;
use sqlx::PgPool;

use crate::auth::Role;
use crate::auth::ldap::LdapSettings;
use crate::auth::oidc::{Oidc, OidcSettings};
use crate::db::audit::{self, Change};
use crate::error::AppError;

/// The cause written into every audit entry a sign-in's mapping makes.
pub const CAUSE: &str = "from the identity provider";

/// What one rule gives to members of its group.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Gives {
    /// A global role: admin, finance or researcher.
    Role(Role),
    /// Leadership of the named tree node (and so its subtree).
    Lead(String),
    /// Membership of the named project.
    Project(String),
}

/// One mapping rule: members of `group` get `gives`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The group's name as the provider spells it (compared without regard to ASCII case).
    pub group: String,
    /// What the group gives.
    pub gives: Gives,
}

/// The mapping rules, read once at start-up from `TRANCHE_IDP_MAPPING_FILE`.
#[derive(Clone, Debug, Default)]
pub struct Mapping {
    /// The rules in file order.
    pub rules: Vec<Rule>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MappingFile {
    #[serde(default)]
    rule: Vec<RuleFile>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    group: String,
    role: Option<String>,
    node: Option<String>,
    project: Option<String>,
}

impl Mapping {
    /// Parses a mapping file: TOML with one `[[rule]]` table per rule, each with `group` and
    /// either `role = "admin" | "finance" | "researcher"`, `role = "lead"` with `node = "NAME"`,
    /// or `project = "NAME"`.
    ///
    /// # Errors
    /// A message naming the rule (1-based) at fault: bad TOML, an unknown key, a rule that
    /// gives nothing or two things, an unknown role, a lead without a node.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: MappingFile = basic_toml::from_str(text).map_err(|e| e.to_string())?;
        let mut rules = Vec::with_capacity(file.rule.len());
        for (i, r) in file.rule.into_iter().enumerate() {
            let n = i + 1;
            let group = r.group.trim().to_string();
            if group.is_empty() {
                return Err(format!("rule {n}: group is empty"));
            }
            let node = r
                .node
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty());
            let gives = match (r.role.as_deref().map(str::trim), r.project) {
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "rule {n}: give either a role or a project, not both"
                    ));
                }
                (None, None) => return Err(format!("rule {n}: give a role or a project")),
                (None, Some(p)) if node.is_none() && !p.trim().is_empty() => {
                    Gives::Project(p.trim().to_string())
                }
                (None, Some(_)) => {
                    return Err(format!(
                        "rule {n}: a project rule names the project and nothing else"
                    ));
                }
                (Some(role), None) => match (Role::parse(role), node) {
                    (Some(Role::Lead), Some(node)) => Gives::Lead(node),
                    (Some(Role::Lead), None) => {
                        return Err(format!("rule {n}: a lead rule needs the node they lead"));
                    }
                    (Some(_), Some(_)) => {
                        return Err(format!("rule {n}: only a lead rule names a node"));
                    }
                    (Some(role), None) => Gives::Role(role),
                    (None, _) => {
                        return Err(format!(
                            "rule {n}: a role is admin, finance, lead or researcher (got {role:?})"
                        ));
                    }
                },
            };
            rules.push(Rule { group, gives });
        }
        Ok(Self { rules })
    }

    /// Reads and parses the mapping file at `path`.
    ///
    /// # Errors
    /// An unreadable file or [`Mapping::parse`]'s errors, with the path.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read the mapping file {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("mapping file {}: {e}", path.display()))
    }

    /// What a member of `groups` gets, deduplicated.
    pub fn gives(&self, groups: &[String]) -> BTreeSet<Gives> {
        self.rules
            .iter()
            .filter(|r| groups.iter().any(|g| g.eq_ignore_ascii_case(&r.group)))
            .map(|r| r.gives.clone())
            .collect()
    }
}

/// Everything about the identity provider: the mapping, LDAP, and how long external
/// accounts' sessions may last.
#[derive(Clone, Debug)]
pub struct Sso {
    /// The mapping rules.
    pub mapping: Mapping,
    /// LDAP, when `TRANCHE_LDAP_URL` is set.
    pub ldap: Option<LdapSettings>,
    /// OpenID Connect, when `TRANCHE_OIDC_ISSUER` is set.
    pub oidc: Option<std::sync::Arc<Oidc>>,
    /// Longest a session of an external account lasts, seconds, however active it is
    /// (`TRANCHE_EXTERNAL_SESSION_MAX_S`, default 8 h): a user removed from a group at the
    /// provider loses the grant at their next sign-in, at the latest this long after.
    pub external_session_max_s: i64,
}

impl Default for Sso {
    fn default() -> Self {
        Self {
            mapping: Mapping::default(),
            ldap: None,
            oidc: None,
            external_session_max_s: 8 * 3600,
        }
    }
}

impl Sso {
    /// Reads `TRANCHE_IDP_MAPPING_FILE`, `TRANCHE_EXTERNAL_SESSION_MAX_S`, the LDAP
    /// variables ([`LdapSettings::from_env`]) and the OpenID Connect ones
    /// ([`OidcSettings::from_env`]).
    ///
    /// # Errors
    /// A missing or malformed mapping file, a session age outside 60 s to 30 days, malformed
    /// LDAP or OpenID Connect settings, or a provider configured without a mapping file.
    pub fn from_env() -> anyhow::Result<Self> {
        let mapping = match std::env::var("TRANCHE_IDP_MAPPING_FILE") {
            Ok(p) if !p.trim().is_empty() => Mapping::load(Path::new(p.trim()))?,
            _ => Mapping::default(),
        };
        let external_session_max_s = match std::env::var("TRANCHE_EXTERNAL_SESSION_MAX_S") {
            Ok(v) if !v.trim().is_empty() => match v.trim().parse::<i64>() {
                Ok(s) if (60..=30 * 86_400).contains(&s) => s,
                _ => anyhow::bail!(
                    "TRANCHE_EXTERNAL_SESSION_MAX_S must be a number of seconds from 60 to 2592000, got {v:?}"
                ),
            },
            _ => 8 * 3600,
        };
        let ldap = LdapSettings::from_env()?;
        if ldap.is_some() && mapping.rules.is_empty() {
            anyhow::bail!(
                "TRANCHE_LDAP_URL is set but TRANCHE_IDP_MAPPING_FILE names no rules: nobody could sign in through the directory"
            );
        }
        let oidc = match OidcSettings::from_env()? {
            Some(settings) => {
                if mapping.rules.is_empty() {
                    anyhow::bail!(
                        "TRANCHE_OIDC_ISSUER is set but TRANCHE_IDP_MAPPING_FILE names no rules: nobody could sign in through the provider"
                    );
                }
                Some(std::sync::Arc::new(Oidc::new(settings)?))
            }
            None => None,
        };
        Ok(Self {
            mapping,
            ldap,
            oidc,
            external_session_max_s,
        })
    }
}

/// Who the provider says signed in.
#[derive(Clone, Debug)]
pub struct ExternalIdentity {
    /// `ldap` or `oidc`.
    pub source: &'static str,
    /// The provider's stable identifier of the person (LDAP: the entry's DN, lower-cased;
    /// OpenID Connect: the ID token's `sub`).
    pub subject: String,
    /// The user name for a new account.
    pub name: String,
    /// The groups the provider lists for the person.
    pub groups: Vec<String>,
}

/// Why a sign-in the provider accepted does not start a session.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not in any mapped group, and no grant given by hand: no account is created, and an
    /// existing one keeps only what was given by hand (nothing).
    #[error(
        "your account is in none of the groups that give access to Tranche; ask an administrator to add you to one"
    )]
    NoAccess,
    /// The name is not a valid Tranche user name.
    #[error("{0}")]
    BadName(String),
    /// A local account (or another provider's) already has this name.
    #[error(
        "a Tranche account named {0} already exists and is not linked to your organisation account; ask an administrator"
    )]
    NameTaken(String),
    /// The account was disabled in Tranche.
    #[error("this account is disabled in Tranche")]
    Disabled,
}

/// A mapped grant resolved to ids: `(role, lead node)` or a project id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Resolved {
    Role(&'static str, Option<i64>),
    Project(i64),
}

/// Applies the mapping to `who` in one transaction: finds or creates the account, replaces
/// its mapped grants and memberships with what `mapping` gives now (each change audited with
/// [`CAUSE`]), and returns `(user id, session epoch)` for the session, or the [`Refusal`].
/// Removals are kept even when the sign-in is then refused. A rule naming a node or project
/// that does not exist (or is archived) gives nothing and is logged. The last admin grant of
/// the installation is never removed this way (logged instead).
///
/// # Errors
/// Database errors.
pub async fn apply(
    pool: &PgPool,
    mapping: &Mapping,
    who: &ExternalIdentity,
) -> Result<Result<(i64, i32), Refusal>, AppError> {
    let mut tx = pool.begin().await?;
    let mut want = BTreeSet::new();
    for gives in mapping.gives(&who.groups) {
        let resolved = match &gives {
            Gives::Role(role) => Some(Resolved::Role(role.as_str(), None)),
            Gives::Lead(node) => sqlx::query_scalar::<_, i64>(
                "SELECT id FROM tree_nodes WHERE lower(name) = lower($1) AND NOT archived",
            )
            .bind(node)
            .fetch_optional(&mut *tx)
            .await?
            .map(|id| Resolved::Role("lead", Some(id))),
            Gives::Project(project) => sqlx::query_scalar::<_, i64>(
                "SELECT id FROM tree_nodes WHERE lower(name) = lower($1) AND is_project AND NOT archived",
            )
            .bind(project)
            .fetch_optional(&mut *tx)
            .await?
            .map(Resolved::Project),
        };
        match resolved {
            Some(r) => {
                want.insert(r);
            }
            None => tracing::warn!(
                rule = ?gives,
                "a mapping rule names a tree node or project that does not exist; it gives nothing"
            ),
        }
    }
    let found: Option<(i64, String, bool, i32)> = sqlx::query_as(
        "SELECT id, name, disabled, session_epoch FROM users \
         WHERE external_source = $1 AND external_subject = $2 FOR UPDATE",
    )
    .bind(who.source)
    .bind(&who.subject)
    .fetch_optional(&mut *tx)
    .await?;
    let (user_id, name, epoch) = match found {
        Some((_, _, true, _)) => return Ok(Err(Refusal::Disabled)),
        Some((id, name, false, epoch)) => (id, name, epoch),
        None => {
            if want.is_empty() {
                return Ok(Err(Refusal::NoAccess));
            }
            let name = match crate::domain::ident(&who.name, "user", 64) {
                Ok(n) => n,
                Err(m) => return Ok(Err(Refusal::BadName(m))),
            };
            let taken: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM users WHERE lower(name) = lower($1))",
            )
            .bind(&name)
            .fetch_one(&mut *tx)
            .await?;
            if taken {
                return Ok(Err(Refusal::NameTaken(crate::domain::quote(&name))));
            }
            let (id, epoch): (i64, i32) = sqlx::query_as(
                "INSERT INTO users (name, external_source, external_subject) VALUES ($1, $2, $3) \
                 RETURNING id, session_epoch",
            )
            .bind(&name)
            .bind(who.source)
            .bind(&who.subject)
            .fetch_one(&mut *tx)
            .await?;
            record_idp(
                &mut tx,
                "user.create",
                id,
                None,
                None,
                Some(json!({"name": name, "source": who.source, "cause": CAUSE})),
            )
            .await?;
            (id, name, epoch)
        }
    };
    // What the mapping gave before.
    let had_roles: Vec<(i64, String, Option<i64>)> = sqlx::query_as(
        "SELECT id, role, node_id FROM role_grants WHERE user_id = $1 AND source = 'idp'",
    )
    .bind(user_id)
    .fetch_all(&mut *tx)
    .await?;
    let had_projects: Vec<i64> = sqlx::query_scalar(
        "SELECT project_id FROM project_members WHERE user_id = $1 AND source = 'idp'",
    )
    .bind(user_id)
    .fetch_all(&mut *tx)
    .await?;
    for (grant_id, role, node_id) in &had_roles {
        if want
            .iter()
            .any(|w| *w == Resolved::Role(role_str(role), *node_id))
        {
            continue;
        }
        if role == "admin" {
            // Serialise with hand revocations; the installation keeps at least one admin.
            sqlx::query("LOCK TABLE role_grants IN SHARE ROW EXCLUSIVE MODE")
                .execute(&mut *tx)
                .await?;
            let admins: i64 =
                sqlx::query_scalar("SELECT count(*) FROM role_grants WHERE role = 'admin'")
                    .fetch_one(&mut *tx)
                    .await?;
            if admins <= 1 {
                tracing::warn!(user = %name, "the provider no longer gives admin, but this is the installation's last admin grant; kept");
                continue;
            }
        }
        sqlx::query("DELETE FROM role_grants WHERE id = $1")
            .bind(grant_id)
            .execute(&mut *tx)
            .await?;
        record_idp(&mut tx, "user.revoke", user_id, *node_id, Some(json!({"name": name, "role": role, "node_id": node_id, "source": "idp", "cause": CAUSE})), None).await?;
    }
    for project_id in &had_projects {
        if want.contains(&Resolved::Project(*project_id)) {
            continue;
        }
        sqlx::query(
            "DELETE FROM project_members WHERE project_id = $1 AND user_id = $2 AND source = 'idp'",
        )
        .bind(project_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
        record_idp(
            &mut tx,
            "member.remove",
            user_id,
            Some(*project_id),
            Some(json!({"project_id": project_id, "user": name, "source": "idp", "cause": CAUSE})),
            None,
        )
        .await?;
    }
    for w in &want {
        match *w {
            Resolved::Role(role, node_id) => {
                if had_roles
                    .iter()
                    .any(|(_, r, n)| role_str(r) == role && *n == node_id)
                {
                    continue;
                }
                sqlx::query(
                    "INSERT INTO role_grants (user_id, role, node_id, source) VALUES ($1, $2, $3, 'idp')",
                )
                .bind(user_id)
                .bind(role)
                .bind(node_id)
                .execute(&mut *tx)
                .await?;
                record_idp(&mut tx, "user.grant", user_id, node_id, None, Some(json!({"name": name, "role": role, "node_id": node_id, "source": "idp", "cause": CAUSE}))).await?;
            }
            Resolved::Project(project_id) => {
                if had_projects.contains(&project_id) {
                    continue;
                }
                sqlx::query(
                    "INSERT INTO project_members (project_id, user_id, source) VALUES ($1, $2, 'idp')",
                )
                .bind(project_id)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
                record_idp(&mut tx, "member.add", user_id, Some(project_id), None, Some(json!({"project_id": project_id, "user": name, "source": "idp", "cause": CAUSE}))).await?;
            }
        }
    }
    // No access at all (mapped or by hand): the removals stand, but no session starts.
    let any_access: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM role_grants WHERE user_id = $1) \
             OR EXISTS (SELECT 1 FROM project_members WHERE user_id = $1)",
    )
    .bind(user_id)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    if any_access {
        Ok(Ok((user_id, epoch)))
    } else {
        Ok(Err(Refusal::NoAccess))
    }
}

/// The stored role name as a `'static` string (unknown names never match).
fn role_str(role: &str) -> &'static str {
    Role::parse(role).map_or("", Role::as_str)
}

/// Audits a change the identity provider made to account `user_id` (no actor; the entries'
/// JSON carries the cause "from the identity provider").
async fn record_idp(
    tx: &mut sqlx::PgConnection,
    action: &str,
    user_id: i64,
    node_id: Option<i64>,
    before: Option<serde_json::Value>,
    after: Option<serde_json::Value>,
) -> Result<(), sqlx::Error> {
    audit::record(
        tx,
        Change {
            actor: None,
            action,
            entity: "user",
            entity_id: Some(user_id),
            node_id,
            before,
            after,
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind_of_rule() {
        let m = Mapping::parse(
            r#"
            [[rule]]
            group = "gpu-admins"
            role = "admin"
            [[rule]]
            group = "vision-leads"
            role = "lead"
            node = "Vision"
            [[rule]]
            group = "detection"
            project = "Detection"
            "#,
        )
        .unwrap();
        assert_eq!(
            m.rules.iter().map(|r| r.gives.clone()).collect::<Vec<_>>(),
            vec![
                Gives::Role(Role::Admin),
                Gives::Lead("Vision".into()),
                Gives::Project("Detection".into())
            ]
        );
        let given = m.gives(&["DETECTION".into(), "other".into()]);
        assert_eq!(
            given.into_iter().collect::<Vec<_>>(),
            vec![Gives::Project("Detection".into())]
        );
    }

    #[test]
    fn refuses_bad_rules_naming_them() {
        for (text, expected) in [
            (
                "[[rule]]\ngroup = \"g\"\n",
                "rule 1: give a role or a project",
            ),
            (
                "[[rule]]\ngroup = \"g\"\nrole = \"lead\"\n",
                "rule 1: a lead rule needs the node they lead",
            ),
            (
                "[[rule]]\ngroup = \"g\"\nrole = \"boss\"\n",
                "rule 1: a role is admin, finance, lead or researcher (got \"boss\")",
            ),
            (
                "[[rule]]\ngroup = \"g\"\nrole = \"admin\"\nnode = \"X\"\n",
                "rule 1: only a lead rule names a node",
            ),
            (
                "[[rule]]\ngroup = \"g\"\nrole = \"admin\"\n[[rule]]\ngroup = \"h\"\nrole = \"admin\"\nproject = \"P\"\n",
                "rule 2: give either a role or a project, not both",
            ),
        ] {
            assert_eq!(Mapping::parse(text).unwrap_err(), expected, "{text}");
        }
        assert!(
            Mapping::parse("[[rule]]\ngroup = \"g\"\nrole = \"admin\"\ncolour = \"red\"\n")
                .unwrap_err()
                .contains("colour")
        );
    }
}
