//! The AI use-case register (docs/ai-use-cases.md): every use of AI beyond the GPU cluster (a
//! model API, an assistant licence, an automation) as a use case with an owner team (a tree
//! node), the data it may use, what the AI does, where a person reviews it, a monthly limit,
//! a metric, a stop rule, a bag and a status; optionally the GPU projects that belong to it.
//!
//! Who may do what: a lead manages the use cases owned by a node of their subtree (and links
//! only projects of it); admin and finance see all; a researcher sees those owned by one of
//! their projects or a node above one, and those linked to one of their projects. Every change
//! is audited in the transaction that makes it.
//!
//! [`import`] reads outside cost exports, [`spend`] stores them and sums spend per use case.

pub mod import;
pub mod spend;

use serde_json::json;
use sqlx::PgPool;

use crate::auth::{Account, Parents};
use crate::db::audit::{self, Change};
use crate::db::tree::TreeView;
use crate::domain::{self, Money};
use crate::error::AppError;
use crate::i18n;
use crate::i18n::notice::{Notice, StopReason};

/// The three bags, with controls that grow in this order.
pub const BAGS: [(&str, &str); 3] = [
    ("personal", "Personal productivity"),
    ("team", "Team processes"),
    ("critical", "Critical systems"),
];

/// The statuses a use case goes through.
pub const STATUSES: [&str; 4] = ["proposed", "pilot", "active", "stopped"];

/// The longest free-text field, characters.
pub const MAX_TEXT: usize = 2000;

/// The label of a bag (`critical` → `Critical systems`); the code itself when unknown.
pub fn bag_label(bag: &str) -> &str {
    BAGS.iter()
        .find(|(code, _)| *code == bag)
        .map_or(bag, |(_, label)| label)
}

/// A use case as stored.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct UseCase {
    /// Id.
    pub id: i64,
    /// Unique name.
    pub name: String,
    /// Owner team: a tree node id.
    pub owner_node_id: i64,
    /// The owner node's name.
    pub owner: String,
    /// `personal`, `team` or `critical`.
    pub bag: String,
    /// `proposed`, `pilot`, `active` or `stopped`.
    pub status: String,
    /// The data it may use.
    pub allowed_data: String,
    /// What the AI does.
    pub ai_action: String,
    /// Where a person reviews it.
    pub human_review: String,
    /// Monthly limit, minor units of the site's currency.
    pub monthly_limit_minor: i64,
    /// The metric that shows whether it deserves to continue.
    pub metric: String,
    /// When it must stop.
    pub stop_rule: String,
    /// Outside services it may use.
    pub services: Vec<String>,
    /// Linked GPU projects (ids): their ledger spend counts towards it.
    pub project_ids: Vec<i64>,
    /// Linked GPU projects' names, aligned with `project_ids`.
    pub projects: Vec<String>,
    /// The price of an hour of human work on it, minor units.
    pub human_hourly_rate_minor: i64,
    /// Linked GPU projects left out of `project_ids` and `projects` because the reader may
    /// not see them ([`UseCase::as_seen_by`]); 0 as stored.
    #[sqlx(skip)]
    pub hidden_projects: usize,
    /// Their ids, never shown: the use case's whole spend counts them
    /// ([`spend::SpendBook::whole`]).
    #[sqlx(skip)]
    #[serde(skip)]
    pub hidden_project_ids: Vec<i64>,
}

const COLUMNS: &str = "u.id, u.name, u.owner_node_id, o.name AS owner, u.bag, u.status, u.allowed_data, \
    u.ai_action, u.human_review, u.monthly_limit_minor, u.metric, u.stop_rule, u.services, u.human_hourly_rate_minor, \
    coalesce(array(SELECT l.project_id FROM ai_use_case_projects l JOIN tree_nodes t ON t.id = l.project_id WHERE l.use_case_id = u.id ORDER BY t.name), '{}') AS project_ids, \
    coalesce(array(SELECT t.name FROM ai_use_case_projects l JOIN tree_nodes t ON t.id = l.project_id WHERE l.use_case_id = u.id ORDER BY t.name), '{}') AS projects";

/// What a person enters for a use case, checked by [`Draft::check`].
#[derive(Clone, Debug, Default)]
pub struct Draft {
    /// Name.
    pub name: String,
    /// Owner node id.
    pub owner_node_id: i64,
    /// Bag code.
    pub bag: String,
    /// Allowed data.
    pub allowed_data: String,
    /// AI action.
    pub ai_action: String,
    /// Human review.
    pub human_review: String,
    /// Monthly limit.
    pub monthly_limit: Money,
    /// Metric.
    pub metric: String,
    /// Stop rule.
    pub stop_rule: String,
    /// Services it may use.
    pub services: Vec<String>,
    /// Linked GPU project ids.
    pub project_ids: Vec<i64>,
    /// The price of an hour of human work on it.
    pub human_hourly_rate: Money,
}

impl Draft {
    /// Checks the draft against the tree and what `me` may manage, trimming its texts.
    ///
    /// # Errors
    /// 422 naming the field for a bad value, and for an owner node unknown or outside `me`'s
    /// view; 403 when `me` may not manage the owner node or a linked project; 404 for an
    /// unknown project.
    pub fn check(mut self, me: &Account, tree: &TreeView) -> Result<Self, AppError> {
        self.name = self.name.trim().to_string();
        if self.name.is_empty() || self.name.chars().count() > 120 {
            return Err(AppError::invalid("name", i18n::t("ai-err-name")));
        }
        // A node outside the caller's view is answered as an unknown one: a refusal naming
        // it would list the tree to anyone who counts ids.
        let Some(owner) = tree
            .node(self.owner_node_id)
            .filter(|n| me.sees_node(n.id, &tree.parents))
        else {
            return Err(AppError::invalid("owner", i18n::t("ai-err-owner")));
        };
        if !me.leads(owner.id, &tree.parents) {
            return Err(AppError::Forbidden(i18n::t1(
                "ai-err-not-lead-register",
                "node",
                &owner.name,
            )));
        }
        if !BAGS.iter().any(|(code, _)| *code == self.bag) {
            return Err(AppError::invalid("bag", i18n::t("ai-err-bag")));
        }
        for (field, text) in [
            ("allowed_data", &mut self.allowed_data),
            ("ai_action", &mut self.ai_action),
            ("human_review", &mut self.human_review),
            ("metric", &mut self.metric),
            ("stop_rule", &mut self.stop_rule),
        ] {
            *text = text.trim().to_string();
            if text.chars().count() > MAX_TEXT {
                return Err(AppError::invalid(
                    field,
                    too_long(&format!("ai-field-{field}"), MAX_TEXT),
                ));
            }
        }
        if self.monthly_limit.0 <= 0 {
            return Err(AppError::invalid(
                "monthly_limit",
                i18n::t("ai-err-limit-zero"),
            ));
        }
        if self.monthly_limit > Money::MAX {
            return Err(AppError::invalid(
                "monthly_limit",
                i18n::t1(
                    "inventory-amount-too-large",
                    "got",
                    self.monthly_limit.amount(),
                ),
            ));
        }
        // The same bound for the API and the form (the form took any rate, and a month's
        // human cost then wrapped to a negative amount: found by a new-user check).
        if !(0..=MAX_HOURLY_RATE_MINOR).contains(&self.human_hourly_rate.0) {
            return Err(AppError::invalid(
                "human_hourly_rate",
                i18n::t1(
                    "ai-err-hourly-rate-range",
                    "max",
                    Money(MAX_HOURLY_RATE_MINOR).amount(),
                ),
            ));
        }
        if self.metric.is_empty() {
            return Err(AppError::invalid("metric", i18n::t("ai-err-metric")));
        }
        if self.bag == "critical" && self.stop_rule.is_empty() {
            return Err(AppError::invalid("stop_rule", i18n::t("ai-err-stop-rule")));
        }
        // Each service once, in the order first given.
        let mut seen = std::collections::HashSet::new();
        let services: Vec<String> = self
            .services
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && seen.insert(s.clone()))
            .collect();
        if services.len() > 50 || services.iter().any(|s| s.chars().count() > 200) {
            return Err(AppError::invalid("services", i18n::t("ai-err-services")));
        }
        self.services = services;
        self.project_ids.sort_unstable();
        self.project_ids.dedup();
        for p in &self.project_ids {
            // A project `me` may not see is unknown to them alike (its name is not told).
            let Some(node) = tree
                .node(*p)
                .filter(|n| n.is_project && me.may_view(n.id, &tree.parents))
            else {
                return Err(AppError::invalid(
                    "projects",
                    i18n::t1("ai-err-not-live-project", "id", p.to_string()),
                ));
            };
            if !me.leads(node.id, &tree.parents) {
                return Err(AppError::Forbidden(i18n::t1(
                    "ai-err-not-lead-link",
                    "node",
                    &node.name,
                )));
            }
        }
        Ok(self)
    }

    fn audit_json(&self) -> serde_json::Value {
        json!({
            "name": self.name,
            "owner_node_id": self.owner_node_id,
            "bag": self.bag,
            "allowed_data": self.allowed_data,
            "ai_action": self.ai_action,
            "human_review": self.human_review,
            "monthly_limit_minor": self.monthly_limit.0,
            "metric": self.metric,
            "stop_rule": self.stop_rule,
            "services": self.services,
            "project_ids": self.project_ids,
            "human_hourly_rate_minor": self.human_hourly_rate.0,
        })
    }
}

impl UseCase {
    /// The use case as a draft, to edit it.
    pub fn draft(&self) -> Draft {
        Draft {
            name: self.name.clone(),
            owner_node_id: self.owner_node_id,
            bag: self.bag.clone(),
            allowed_data: self.allowed_data.clone(),
            ai_action: self.ai_action.clone(),
            human_review: self.human_review.clone(),
            monthly_limit: Money(self.monthly_limit_minor),
            metric: self.metric.clone(),
            stop_rule: self.stop_rule.clone(),
            services: self.services.clone(),
            project_ids: self.project_ids.clone(),
            human_hourly_rate: Money(self.human_hourly_rate_minor),
        }
    }

    /// Whether `me` may change it: admin, or a lead of its owner node or a node above.
    pub fn may_manage(&self, me: &Account, parents: &Parents) -> bool {
        me.leads(self.owner_node_id, parents)
    }

    /// The use case as `me` may read it: the linked projects `me` may not see (their names
    /// are hidden on the program tree and project pages too) leave `project_ids` and
    /// `projects` and are only counted in `hidden_projects`, so neither their names nor their
    /// spend ([`spend::SpendBook::seen`]) reach a reader who may not see them.
    #[must_use]
    pub fn as_seen_by(mut self, me: &Account, parents: &Parents) -> Self {
        if me.sees_everything() {
            return self;
        }
        let (mut ids, mut names) = (Vec::new(), Vec::new());
        for (id, name) in self.project_ids.iter().zip(&self.projects) {
            if me.may_view(*id, parents) {
                ids.push(*id);
                names.push(name.clone());
            } else {
                self.hidden_project_ids.push(*id);
            }
        }
        self.hidden_projects = self.hidden_project_ids.len();
        self.project_ids = ids;
        self.projects = names;
        self
    }

    /// Whether `me` may see it: admin and finance; leads of its owner; researchers of a
    /// project under its owner node or linked to it.
    pub fn may_view(&self, me: &Account, parents: &Parents) -> bool {
        me.sees_everything()
            || self.may_manage(me, parents)
            || me.projects.iter().any(|p| {
                self.project_ids.contains(p) || parents.is_ancestor_or_self(self.owner_node_id, *p)
            })
    }
}

/// "`field`: at most `max` characters", the field named by the message `field_key`.
fn too_long(field_key: &str, max: usize) -> String {
    i18n::t2(
        "ai-err-too-long",
        "field",
        i18n::t(field_key),
        "max",
        i18n::format::count(max as i64),
    )
}

/// "you do not lead OWNER, so you cannot ..." for the message `key`.
fn not_lead(key: &str, owner: &str) -> AppError {
    AppError::Forbidden(i18n::t1(key, "owner", owner))
}

/// "there is no use case ID".
fn no_use_case(id: i64) -> AppError {
    AppError::NotFound(i18n::t1("ai-no-use-case", "id", id.to_string()))
}

/// All use cases, by name (callers filter with [`UseCase::may_view`]).
///
/// # Errors
/// Database errors.
pub async fn all(db: impl sqlx::PgExecutor<'_>) -> Result<Vec<UseCase>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM ai_use_cases u JOIN tree_nodes o ON o.id = u.owner_node_id ORDER BY u.name"
    ))
    .fetch_all(db)
    .await
}

/// The use cases `me` may see, by name.
///
/// # Errors
/// Database errors.
pub async fn visible(
    pool: &PgPool,
    me: &Account,
    parents: &Parents,
) -> Result<Vec<UseCase>, sqlx::Error> {
    Ok(all(pool)
        .await?
        .into_iter()
        .filter(|u| u.may_view(me, parents))
        .map(|u| u.as_seen_by(me, parents))
        .collect())
}

/// One use case by id, whoever asks.
///
/// # Errors
/// 404 for an unknown id; database errors.
pub async fn get(db: impl sqlx::PgExecutor<'_>, id: i64) -> Result<UseCase, AppError> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM ai_use_cases u JOIN tree_nodes o ON o.id = u.owner_node_id WHERE u.id = $1"
    ))
    .bind(id)
    .fetch_optional(db)
    .await?
    .ok_or_else(|| no_use_case(id))
}

/// One use case `me` may see.
///
/// # Errors
/// 404 unknown or not visible to `me` (alike: its existence is not told).
pub async fn get_visible(
    pool: &PgPool,
    me: &Account,
    parents: &Parents,
    id: i64,
) -> Result<UseCase, AppError> {
    let u = get(pool, id).await?;
    // One `me` may not see answers as a missing one: its existence is not told.
    if !u.may_view(me, parents) {
        return Err(no_use_case(id));
    }
    Ok(u.as_seen_by(me, parents))
}

async fn write_links(
    tx: &mut sqlx::PgConnection,
    id: i64,
    projects: &[i64],
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM ai_use_case_projects WHERE use_case_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO ai_use_case_projects (use_case_id, project_id) SELECT $1, unnest($2::bigint[])",
    )
    .bind(id)
    .bind(projects)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// 422 `name_taken` naming `name`.
fn taken(name: &str) -> AppError {
    AppError::Unprocessable {
        code: "name_taken",
        field: Some("name"),
        message: i18n::t1("ai-err-name-taken", "name", domain::quote(name)),
    }
}

fn name_taken(e: sqlx::Error, name: &str) -> AppError {
    match e.as_database_error().and_then(|d| d.constraint()) {
        Some("ai_use_cases_name_key") => taken(name),
        _ => e.into(),
    }
}

/// Refuses `name` when another use case (not `except`) has it whatever its case, as the names
/// of projects, clusters and users are unique whatever their case ("Triage" beside "triage"
/// would read as one use case in lists and reports). Takes a transaction-scoped lock, so two
/// registrations that differ only in case cannot both pass.
///
/// # Errors
/// 422 `name_taken`; database errors.
async fn check_name_free(
    tx: &mut sqlx::PgConnection,
    name: &str,
    except: Option<i64>,
) -> Result<(), AppError> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('ai_use_cases.name'))")
        .execute(&mut *tx)
        .await?;
    let in_use: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM ai_use_cases WHERE lower(name) = lower($1) AND id IS DISTINCT FROM $2)",
    )
    .bind(name)
    .bind(except)
    .fetch_one(&mut *tx)
    .await?;
    if in_use { Err(taken(name)) } else { Ok(()) }
}

/// Registers a use case (status `proposed`), audited as `use_case.create`. Returns its id.
///
/// # Errors
/// As [`Draft::check`]; 422 `name_taken` for a name in use; database errors.
pub async fn create(
    pool: &PgPool,
    me: &Account,
    tree: &TreeView,
    draft: Draft,
) -> Result<i64, AppError> {
    let d = draft.check(me, tree)?;
    let mut tx = pool.begin().await?;
    check_name_free(&mut tx, &d.name, None).await?;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO ai_use_cases (name, owner_node_id, bag, allowed_data, ai_action, human_review, \
         monthly_limit_minor, metric, stop_rule, services, created_by, human_hourly_rate_minor) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
    )
    .bind(&d.name)
    .bind(d.owner_node_id)
    .bind(&d.bag)
    .bind(&d.allowed_data)
    .bind(&d.ai_action)
    .bind(&d.human_review)
    .bind(d.monthly_limit.0)
    .bind(&d.metric)
    .bind(&d.stop_rule)
    .bind(&d.services)
    .bind(me.id)
    .bind(d.human_hourly_rate.0)
    .fetch_one(&mut *tx)
    .await
    .map_err(|e| name_taken(e, &d.name))?;
    write_links(&mut tx, id, &d.project_ids).await?;
    let mut after = d.audit_json();
    after["status"] = json!("proposed");
    audit::record(
        &mut *tx,
        Change {
            actor: Some(me.id),
            action: "use_case.create",
            entity: "ai_use_case",
            entity_id: Some(id),
            node_id: Some(d.owner_node_id),
            before: None,
            after: Some(after),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// Changes a use case's fields (not its status), audited as `use_case.update` with the state
/// before and after. `me` must manage it where it is and where it goes.
///
/// # Errors
/// 404 unknown; 403 not managed by `me`; as [`create`].
pub async fn update(
    pool: &PgPool,
    me: &Account,
    tree: &TreeView,
    id: i64,
    draft: Draft,
) -> Result<(), AppError> {
    let d = draft.check(me, tree)?;
    let mut tx = pool.begin().await?;
    sqlx::query_scalar::<_, i64>("SELECT id FROM ai_use_cases WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| no_use_case(id))?;
    let before = get(&mut *tx, id).await?;
    if !before.may_manage(me, &tree.parents) {
        return Err(not_lead("ai-not-lead-change", &before.owner));
    }
    check_name_free(&mut tx, &d.name, Some(id)).await?;
    // Links to projects `me` may not see were not on the form `me` was shown: kept.
    let mut d = d;
    d.project_ids.extend(
        before
            .clone()
            .as_seen_by(me, &tree.parents)
            .hidden_project_ids,
    );
    d.project_ids.sort_unstable();
    d.project_ids.dedup();
    sqlx::query(
        "UPDATE ai_use_cases SET name = $2, owner_node_id = $3, bag = $4, allowed_data = $5, ai_action = $6, \
         human_review = $7, monthly_limit_minor = $8, metric = $9, stop_rule = $10, services = $11, \
         human_hourly_rate_minor = $12, updated_at = now() \
         WHERE id = $1",
    )
    .bind(id)
    .bind(&d.name)
    .bind(d.owner_node_id)
    .bind(&d.bag)
    .bind(&d.allowed_data)
    .bind(&d.ai_action)
    .bind(&d.human_review)
    .bind(d.monthly_limit.0)
    .bind(&d.metric)
    .bind(&d.stop_rule)
    .bind(&d.services)
    .bind(d.human_hourly_rate.0)
    .execute(&mut *tx)
    .await
    .map_err(|e| name_taken(e, &d.name))?;
    write_links(&mut tx, id, &d.project_ids).await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(me.id),
            action: "use_case.update",
            entity: "ai_use_case",
            entity_id: Some(id),
            node_id: Some(d.owner_node_id),
            before: Some(before.draft().audit_json()),
            after: Some(d.audit_json()),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Moves a use case to `status` (`proposed`, `pilot`, `active`, `stopped`), audited as
/// `use_case.status`. Setting the status it already has changes nothing and records nothing.
///
/// # Errors
/// 422 for an unknown status; 404 unknown use case; 403 not managed by `me`.
pub async fn set_status(
    pool: &PgPool,
    me: &Account,
    parents: &Parents,
    id: i64,
    status: &str,
) -> Result<UseCase, AppError> {
    let status = status.trim();
    if !STATUSES.contains(&status) {
        return Err(AppError::invalid(
            "status",
            i18n::t1("ai-err-status", "got", domain::quote(status)),
        ));
    }
    let mut tx = pool.begin().await?;
    let current: Option<String> =
        sqlx::query_scalar("SELECT status FROM ai_use_cases WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some(current) = current else {
        return Err(no_use_case(id));
    };
    let u = get(&mut *tx, id).await?;
    if !u.may_manage(me, parents) {
        return Err(not_lead("ai-not-lead-change", &u.owner));
    }
    if current != status {
        sqlx::query("UPDATE ai_use_cases SET status = $2, updated_at = now() WHERE id = $1")
            .bind(id)
            .bind(status)
            .execute(&mut *tx)
            .await?;
        audit::record(
            &mut *tx,
            Change {
                actor: Some(me.id),
                action: "use_case.status",
                entity: "ai_use_case",
                entity_id: Some(id),
                node_id: Some(u.owner_node_id),
                before: Some(json!({"status": current})),
                after: Some(json!({"status": status})),
            },
        )
        .await?;
    }
    tx.commit().await?;
    get(pool, id).await
}

/// Raises "stop rule triggered" for a use case in `period` (once per period), in the
/// caller's transaction, and notifies its owner team's leads and finance. Tranche cannot stop
/// an outside service: the message says so and asks the owner to stop it and acknowledge.
/// `reason` is the English text stored with the trigger; `why` the same structured, stored as
/// the notification's [`Notice`] so that readers see it in their language. Returns the users
/// notified, or `None` when it was raised before in the period.
///
/// # Errors
/// Database errors.
pub async fn stop_rule_triggered(
    tx: &mut sqlx::PgConnection,
    use_case: i64,
    owner: i64,
    period: crate::ledger::Period,
    reason: &str,
    why: StopReason,
) -> Result<Option<Vec<i64>>, sqlx::Error> {
    let (start, _) = period.bounds();
    let name: String = sqlx::query_scalar("SELECT name FROM ai_use_cases WHERE id = $1")
        .bind(use_case)
        .fetch_one(&mut *tx)
        .await?;
    let new: Option<i64> = sqlx::query_scalar(
        "INSERT INTO ai_stop_triggers (use_case_id, period_start, reason) VALUES ($1, $2, $3) \
         ON CONFLICT (use_case_id, period_start) DO NOTHING RETURNING id",
    )
    .bind(use_case)
    .bind(start)
    .bind(reason)
    .fetch_optional(&mut *tx)
    .await?;
    if new.is_none() {
        return Ok(None);
    }
    let message = format!(
        "Stop rule triggered for {name} (critical systems): {reason}. Tranche cannot stop an outside service: stop it, then acknowledge on the use case's page"
    );
    let note = Notice::StopRule {
        use_case: name,
        reason: why,
    };
    Ok(Some(
        crate::ledger::alerts::notify_noted(
            tx,
            owner,
            &message,
            Some(&note),
            &format!("/ai/{use_case}"),
        )
        .await?,
    ))
}

/// A "stop rule triggered" of a use case.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct StopTrigger {
    /// Id.
    pub id: i64,
    /// Period it was raised for.
    #[serde(with = "time::serde::rfc3339")]
    pub period_start: time::OffsetDateTime,
    /// Why.
    pub reason: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub triggered_at: time::OffsetDateTime,
    /// Who acknowledged it, if anyone yet.
    pub acknowledged_by: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339::option")]
    pub acknowledged_at: Option<time::OffsetDateTime>,
    /// The owner's note on acknowledging.
    pub note: String,
}

/// A use case's stop triggers, newest first.
///
/// # Errors
/// Database errors.
pub async fn stop_triggers(pool: &PgPool, use_case: i64) -> Result<Vec<StopTrigger>, sqlx::Error> {
    sqlx::query_as(
        "SELECT s.id, s.period_start, s.reason, s.triggered_at, u.name AS acknowledged_by, s.acknowledged_at, s.note \
         FROM ai_stop_triggers s LEFT JOIN users u ON u.id = s.acknowledged_by WHERE s.use_case_id = $1 ORDER BY s.id DESC",
    )
    .bind(use_case)
    .fetch_all(pool)
    .await
}

/// What each trigger's stored English reason says, structured, for pages in another language
/// (`triggers` of one use case, as [`stop_triggers`] lists them): the owner's report, or the
/// limit crossed, read back from the actual-spend alert of the trigger's month whose English
/// words are the stored reason; `None` for a reason that cannot be read back (never expected).
///
/// # Errors
/// Database errors.
pub async fn stop_reasons(
    pool: &PgPool,
    site: &crate::config::Site,
    use_case: i64,
    triggers: &[StopTrigger],
) -> Result<Vec<Option<StopReason>>, sqlx::Error> {
    let alerts: Vec<(time::OffsetDateTime, i64, i64)> = sqlx::query_as(
        "SELECT period_start, spent_minor, limit_minor FROM ai_use_case_alerts \
         WHERE use_case_id = $1 AND kind = 'actual' ORDER BY id",
    )
    .bind(use_case)
    .fetch_all(pool)
    .await?;
    Ok(triggers
        .iter()
        .map(|t| {
            if let Some(text) = t.reason.strip_prefix("stop criterion met: ") {
                return Some(StopReason::Criterion {
                    text: text.to_string(),
                });
            }
            let month = site.periods.month(crate::ledger::to_jiff(t.period_start));
            alerts
                .iter()
                .filter(|(start, ..)| *start == t.period_start)
                .map(|(_, amount, limit)| StopReason::Limit {
                    month,
                    amount: *amount,
                    limit: *limit,
                })
                .find(|r| r.message(i18n::Lang::En, &site.currency) == t.reason)
        })
        .collect())
}

/// The owner acknowledges the open "stop rule triggered" of a use case, with a note (what was
/// done), audited as `use_case.stop_acknowledge`.
///
/// # Errors
/// 404 unknown use case; 403 not managed by `me`; 409 `nothing_to_acknowledge` when no
/// trigger is open; 422 for a note over [`MAX_TEXT`] characters.
pub async fn acknowledge_stop(
    pool: &PgPool,
    me: &Account,
    parents: &Parents,
    id: i64,
    note: &str,
) -> Result<(), AppError> {
    let note = note.trim();
    if note.chars().count() > MAX_TEXT {
        return Err(AppError::invalid(
            "note",
            too_long("ai-field-note", MAX_TEXT),
        ));
    }
    let u = get(pool, id).await?;
    if !u.may_manage(me, parents) {
        return Err(not_lead("ai-err-not-lead-acknowledge", &u.owner));
    }
    let mut tx = pool.begin().await?;
    let open: Vec<i64> = sqlx::query_scalar(
        "UPDATE ai_stop_triggers SET acknowledged_by = $2, acknowledged_at = now(), note = $3 \
         WHERE use_case_id = $1 AND acknowledged_at IS NULL RETURNING id",
    )
    .bind(id)
    .bind(me.id)
    .bind(note)
    .fetch_all(&mut *tx)
    .await?;
    if open.is_empty() {
        return Err(AppError::Refused {
            code: "nothing_to_acknowledge",
            message: i18n::t("ai-err-nothing-to-acknowledge"),
        });
    }
    audit::record(
        &mut *tx,
        Change {
            actor: Some(me.id),
            action: "use_case.stop_acknowledge",
            entity: "ai_use_case",
            entity_id: Some(id),
            node_id: Some(u.owner_node_id),
            before: Some(json!({"open_triggers": open})),
            after: Some(json!({"note": note})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The owner records that the stop criterion is met (not only the limit): for the
/// critical-systems bag this raises "stop rule triggered" for the current period, audited as
/// `use_case.stop_criterion`.
///
/// # Errors
/// 422 when the use case is not in the critical-systems bag or the reason is empty or too
/// long; 409 `already_triggered` when one is raised for the period; 404/403 as
/// [`acknowledge_stop`].
pub async fn report_stop_criterion(
    pool: &PgPool,
    me: &Account,
    parents: &Parents,
    period: crate::ledger::Period,
    id: i64,
    reason: &str,
) -> Result<(), AppError> {
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > MAX_TEXT {
        return Err(AppError::invalid("reason", i18n::t("ai-err-reason")));
    }
    let u = get(pool, id).await?;
    if !u.may_manage(me, parents) {
        return Err(not_lead("ai-err-not-lead-report", &u.owner));
    }
    if u.bag != "critical" {
        return Err(AppError::invalid("reason", i18n::t("ai-err-not-critical")));
    }
    let mut tx = pool.begin().await?;
    let why = StopReason::Criterion {
        text: reason.to_string(),
    };
    let reason = format!("stop criterion met: {reason}");
    if stop_rule_triggered(&mut tx, id, u.owner_node_id, period, &reason, why)
        .await?
        .is_none()
    {
        return Err(AppError::Refused {
            code: "already_triggered",
            message: i18n::t("ai-err-already-triggered"),
        });
    }
    audit::record(
        &mut *tx,
        Change {
            actor: Some(me.id),
            action: "use_case.stop_criterion",
            entity: "ai_use_case",
            entity_id: Some(id),
            node_id: Some(u.owner_node_id),
            before: None,
            after: Some(json!({"reason": reason})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The three monthly decisions.
pub const DECISIONS: [&str; 3] = ["continue", "expand", "stop"];

/// A monthly decision on a use case.
#[derive(Clone, Debug, serde::Serialize, sqlx::FromRow)]
pub struct Review {
    /// Id.
    pub id: i64,
    /// The use case.
    pub use_case_id: i64,
    /// The month decided on (its first instant).
    #[serde(with = "time::serde::rfc3339")]
    pub period_start: time::OffsetDateTime,
    /// `continue`, `expand` or `stop`.
    pub decision: String,
    /// For `expand`, the new monthly limit, minor units.
    pub new_limit_minor: Option<i64>,
    /// The metric's value as the owner states it.
    pub metric_value: String,
    /// Comment.
    pub comment: String,
    /// The month's spend when decided, minor units.
    pub spent_minor: i64,
    /// The limit when decided, minor units.
    pub limit_minor: i64,
    /// Who decided.
    pub decided_by: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub decided_at: time::OffsetDateTime,
}

/// A decision as entered.
#[derive(Clone, Debug)]
pub struct Decision {
    /// The month decided on.
    pub period: crate::ledger::Period,
    /// `continue`, `expand` or `stop`.
    pub decision: String,
    /// For `expand`: the new monthly limit.
    pub new_limit: Option<Money>,
    /// The metric's value.
    pub metric_value: String,
    /// Comment.
    pub comment: String,
}

/// Every decision on a use case, newest first (the history).
///
/// # Errors
/// Database errors.
pub async fn reviews(
    db: impl sqlx::PgExecutor<'_>,
    use_case: i64,
) -> Result<Vec<Review>, sqlx::Error> {
    sqlx::query_as(
        "SELECT r.id, r.use_case_id, r.period_start, r.decision, r.new_limit_minor, r.metric_value, r.comment, \
                r.spent_minor, r.limit_minor, u.name AS decided_by, r.decided_at \
         FROM ai_reviews r LEFT JOIN users u ON u.id = r.decided_by WHERE r.use_case_id = $1 ORDER BY r.id DESC",
    )
    .bind(use_case)
    .fetch_all(db)
    .await
}

/// The latest decision of every use case that has one.
///
/// # Errors
/// Database errors.
pub async fn last_reviews(pool: &PgPool) -> Result<Vec<Review>, sqlx::Error> {
    sqlx::query_as(
        "SELECT DISTINCT ON (r.use_case_id) r.id, r.use_case_id, r.period_start, r.decision, r.new_limit_minor, \
                r.metric_value, r.comment, r.spent_minor, r.limit_minor, u.name AS decided_by, r.decided_at \
         FROM ai_reviews r LEFT JOIN users u ON u.id = r.decided_by ORDER BY r.use_case_id, r.id DESC",
    )
    .fetch_all(pool)
    .await
}

/// Records the owner's decision for a month, audited as `use_case.review` in the same
/// transaction as its effect: `expand` sets the new monthly limit (which must be above the
/// current one), `stop` sets the status `stopped`. The month's spend and limit are kept with
/// it. `spent` is the month's spend ([`spend::by_use_case`]).
///
/// # Errors
/// 422 naming the field for an unknown decision, continue or expand on a stopped use case, a
/// missing or too small new limit, a new limit
/// on another decision, an empty metric value, over-long texts, or a month that has not begun;
/// 404 unknown use case; 403 not managed by `me`.
pub async fn record_review(
    pool: &PgPool,
    me: &Account,
    parents: &Parents,
    now: jiff::Timestamp,
    id: i64,
    spent: Money,
    d: Decision,
) -> Result<Review, AppError> {
    let decision = d.decision.trim();
    if !DECISIONS.contains(&decision) {
        return Err(AppError::invalid("decision", i18n::t("ai-err-decision")));
    }
    let metric_value = d.metric_value.trim();
    if metric_value.is_empty() || metric_value.chars().count() > 500 {
        return Err(AppError::invalid(
            "metric_value",
            i18n::t("ai-err-metric-value"),
        ));
    }
    let comment = d.comment.trim();
    if comment.chars().count() > MAX_TEXT {
        return Err(AppError::invalid(
            "comment",
            too_long("ai-field-comment", MAX_TEXT),
        ));
    }
    if d.period.start > now {
        return Err(AppError::invalid("month", i18n::t("ai-err-future-month")));
    }
    let mut tx = pool.begin().await?;
    let current: Option<(i64, String)> = sqlx::query_as(
        "SELECT monthly_limit_minor, status FROM ai_use_cases WHERE id = $1 FOR UPDATE",
    )
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((limit, status)) = current else {
        return Err(no_use_case(id));
    };
    let u = get(&mut *tx, id).await?;
    if !u.may_manage(me, parents) {
        return Err(not_lead("ai-err-not-lead-decide", &u.owner));
    }
    // A stopped use case is reopened by its status, not by a review that says it goes on.
    if status == "stopped" && decision != "stop" {
        return Err(AppError::invalid(
            "decision",
            i18n::t("ai-err-decision-stopped"),
        ));
    }
    let new_limit = match (decision, d.new_limit) {
        ("expand", Some(l)) if l > Money::MAX => {
            return Err(AppError::invalid(
                "new_limit",
                i18n::t1("inventory-amount-too-large", "got", l.amount()),
            ));
        }
        ("expand", Some(l)) if l.0 > limit => Some(l.0),
        ("expand", Some(l)) => {
            return Err(AppError::invalid(
                "new_limit",
                i18n::t2(
                    "ai-err-expand-above",
                    "current",
                    Money(limit).amount(),
                    "got",
                    l.amount(),
                ),
            ));
        }
        ("expand", None) => {
            return Err(AppError::invalid(
                "new_limit",
                i18n::t("ai-err-expand-needs"),
            ));
        }
        (_, Some(_)) => {
            return Err(AppError::invalid(
                "new_limit",
                i18n::t("ai-err-only-expand"),
            ));
        }
        (_, None) => None,
    };
    let (start, _) = d.period.bounds();
    let review_id: i64 = sqlx::query_scalar(
        "INSERT INTO ai_reviews (use_case_id, period_start, decision, new_limit_minor, metric_value, comment, spent_minor, limit_minor, decided_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(id)
    .bind(start)
    .bind(decision)
    .bind(new_limit)
    .bind(metric_value)
    .bind(comment)
    .bind(spent.0)
    .bind(limit)
    .bind(me.id)
    .fetch_one(&mut *tx)
    .await?;
    let new_status = if decision == "stop" {
        "stopped"
    } else {
        status.as_str()
    };
    sqlx::query(
        "UPDATE ai_use_cases SET monthly_limit_minor = coalesce($2, monthly_limit_minor), status = $3, updated_at = now() WHERE id = $1",
    )
    .bind(id)
    .bind(new_limit)
    .bind(new_status)
    .execute(&mut *tx)
    .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(me.id),
            action: "use_case.review",
            entity: "ai_use_case",
            entity_id: Some(id),
            node_id: Some(u.owner_node_id),
            before: Some(json!({"monthly_limit_minor": limit, "status": status})),
            after: Some(json!({
                "review_id": review_id, "month": d.period.start.to_string(), "decision": decision,
                "monthly_limit_minor": new_limit.unwrap_or(limit), "status": new_status,
                "metric_value": metric_value, "comment": comment, "spent_minor": spent.0,
            })),
        },
    )
    .await?;
    let review = reviews(&mut *tx, id)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("review {review_id} vanished"))?;
    tx.commit().await?;
    Ok(review)
}

/// Use cases waiting for a decision: those active in the month before `now`'s that have no
/// decision for it yet (created before that month ended), by name, among `cases`.
///
/// # Errors
/// Database errors.
pub async fn pending_reviews(
    pool: &PgPool,
    previous: crate::ledger::Period,
    cases: &[UseCase],
) -> Result<Vec<i64>, sqlx::Error> {
    let (start, end) = previous.bounds();
    let ids: Vec<i64> = cases
        .iter()
        .filter(|u| u.status == "active")
        .map(|u| u.id)
        .collect();
    sqlx::query_scalar(
        "SELECT u.id FROM ai_use_cases u WHERE u.id = ANY($1) AND u.created_at < $3 \
         AND NOT EXISTS (SELECT 1 FROM ai_reviews r WHERE r.use_case_id = u.id AND r.period_start = $2) ORDER BY u.name",
    )
    .bind(&ids)
    .bind(start)
    .bind(end)
    .fetch_all(pool)
    .await
}

/// The kinds of human work on a use case: preparing data, reviewing answers, chasing
/// exceptions.
pub const ACTIVITIES: [(&str, &str); 3] = [
    ("data", "preparing data"),
    ("review", "reviewing answers"),
    ("exceptions", "chasing exceptions"),
];

/// The most hours one entry records: 74,400 (a month's work of a hundred people).
pub const MAX_HOURS: i64 = 74_400;

/// Parses hours as a decimal (`1.5`, `0,25`; separators as [`domain::decimal_parts`] reads
/// them) into whole minutes. Nothing is rounded: a third decimal (`1.001`; zeros after the
/// second, `1.500`, are no precision and pass) and anything above [`MAX_HOURS`]
/// (`74400.0000001`) are refused.
///
/// # Errors
/// 422 on `hours`, with its own message for: not a positive number, more than two decimals,
/// over 74,400 hours, not a whole number of minutes (steps of 0.05 hours).
pub fn parse_hours(text: &str) -> Result<i32, AppError> {
    let got = domain::quote(text.trim());
    let refuse = |key: &str| AppError::invalid("hours", i18n::t1(key, "got", got.as_str()));
    let (whole, frac) = domain::decimal_parts(text).ok_or_else(|| refuse("ai-err-hours"))?;
    let frac = frac.trim_end_matches('0');
    if frac.len() > 2 {
        return Err(refuse("ai-err-hours-decimals"));
    }
    let whole = whole.trim_start_matches('0');
    // More than six digits is over the maximum whatever they are (and would not fit an i64).
    if whole.len() > 6 {
        return Err(refuse("ai-err-hours-max"));
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| refuse("ai-err-hours"))?
    };
    let frac: i64 = format!("{frac:0<2}")
        .parse()
        .map_err(|_| refuse("ai-err-hours"))?;
    let hundredths = whole * 100 + frac;
    if hundredths <= 0 {
        return Err(refuse("ai-err-hours"));
    }
    if hundredths > MAX_HOURS * 100 {
        return Err(refuse("ai-err-hours-max"));
    }
    // A whole number of minutes: hundredths × 0.6.
    if hundredths * 60 % 100 != 0 {
        return Err(refuse("ai-err-hours-minutes"));
    }
    i32::try_from(hundredths * 60 / 100).map_err(|_| refuse("ai-err-hours-max"))
}

/// Records `minutes` of human work of `activity` on a use case in `period`, audited as
/// `use_case.hours`. Those who manage the use case record hours.
///
/// # Errors
/// 422 for an unknown activity, a non-positive time, a note over 500 characters or a month
/// that has not begun; 404/403.
#[expect(clippy::too_many_arguments, reason = "one entry's fields")]
pub async fn record_hours(
    pool: &PgPool,
    me: &Account,
    parents: &Parents,
    id: i64,
    period: crate::ledger::Period,
    minutes: i32,
    activity: &str,
    note: &str,
) -> Result<i64, AppError> {
    let (activity, note) = (activity.trim(), note.trim());
    if !ACTIVITIES.iter().any(|(a, _)| *a == activity) {
        return Err(AppError::invalid("activity", i18n::t("ai-err-activity")));
    }
    if minutes <= 0 {
        return Err(AppError::invalid("hours", i18n::t("ai-err-hours-zero")));
    }
    if note.chars().count() > 500 {
        return Err(AppError::invalid("note", i18n::t("ai-err-note")));
    }
    if period.start > jiff::Timestamp::now() {
        return Err(AppError::invalid(
            "month",
            i18n::t("ai-err-hours-future-month"),
        ));
    }
    let u = get(pool, id).await?;
    if !u.may_manage(me, parents) {
        return Err(not_lead("ai-err-not-lead-hours", &u.owner));
    }
    let (start, _) = period.bounds();
    let mut tx = pool.begin().await?;
    let entry: i64 = sqlx::query_scalar(
        "INSERT INTO ai_human_hours (use_case_id, period_start, minutes, activity, note, recorded_by) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
    )
    .bind(id)
    .bind(start)
    .bind(minutes)
    .bind(activity)
    .bind(note)
    .bind(me.id)
    .fetch_one(&mut *tx)
    .await?;
    audit::record(
        &mut *tx,
        Change {
            actor: Some(me.id),
            action: "use_case.hours",
            entity: "ai_use_case",
            entity_id: Some(id),
            node_id: Some(u.owner_node_id),
            before: None,
            after: Some(json!({"entry": entry, "month": period.start.to_string(), "minutes": minutes, "activity": activity, "note": note})),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(entry)
}

/// Human work on a use case in a month: minutes per activity (in [`ACTIVITIES`] order) and
/// in all.
///
/// # Errors
/// Database errors.
pub async fn human_minutes(
    pool: &PgPool,
    period: crate::ledger::Period,
) -> Result<std::collections::HashMap<i64, i64>, sqlx::Error> {
    let (start, _) = period.bounds();
    Ok(sqlx::query_as::<_, (i64, i64)>(
        "SELECT use_case_id, sum(minutes)::bigint FROM ai_human_hours WHERE period_start = $1 GROUP BY use_case_id",
    )
    .bind(start)
    .fetch_all(pool)
    .await?
    .into_iter()
    .collect())
}

/// The highest price of an hour of human work a use case may give, minor units (1,000,000.00
/// in a currency of two decimals).
pub const MAX_HOURLY_RATE_MINOR: i64 = 100_000_000;

/// The cost of `minutes` of work at `rate_minor` an hour, minor units, rounded half up, at
/// most [`Money::MAX`] (never wrapping).
pub fn human_cost(minutes: i64, rate_minor: i64) -> Money {
    let cost = (i128::from(minutes) * i128::from(rate_minor) + 30) / 60;
    Money(cost.clamp(-i128::from(Money::MAX.0), i128::from(Money::MAX.0)) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_cost_never_wraps() {
        assert_eq!(human_cost(90, 3000), Money(4500));
        assert_eq!(human_cost(i64::MAX / 2, MAX_HOURLY_RATE_MINOR), Money::MAX);
    }

    #[test]
    fn hours_are_never_rounded_and_never_above_the_maximum() {
        let key = |text: &str| match parse_hours(text) {
            Ok(minutes) => Ok(minutes),
            Err(AppError::Invalid { field, message }) => {
                assert_eq!(field, Some("hours"), "{text}");
                Err(message)
            }
            Err(other) => panic!("{text}: {other:?}"),
        };
        for (text, minutes) in [
            ("1.5", 90),
            ("0.25", 15),
            ("1.500", 90),
            ("0.05", 3),
            ("74400", 74_400 * 60),
            ("74400.00", 74_400 * 60),
            ("074400", 74_400 * 60),
        ] {
            assert_eq!(key(text), Ok(minutes), "{text}");
        }
        for (text, says) in [
            ("1.001", "more than two decimals"),
            ("0.333", "more than two decimals"),
            ("74400.0000001", "more than two decimals"),
            ("74400.05", "more than 74,400"),
            ("74401", "more than 74,400"),
            ("99999999999999999999999", "more than 74,400"),
            ("0.01", "whole number of minutes"),
            ("0", "not a positive number"),
            ("-1", "not a positive number"),
            ("x", "not a positive number"),
        ] {
            let message = key(text).expect_err(text);
            assert!(message.contains(says), "{text}: {message}");
        }
    }
}
