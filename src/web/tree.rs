//! The program tree page, node pages (children's shares; admin create, rename, move,
//! archive) and project pages (the budget bag: entitlement, budget, cap, members).

use std::collections::{HashMap, HashSet};

use axum::Router;
use axum::extract::State;

use crate::web::input::Form;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser, Parents};
use crate::db::tree::{self as tree_db, BudgetUpdate, NodeKind, TreeView};
use crate::domain::{self, Money, Share};
use crate::error::AppError;
use crate::i18n::{self, t, t1};
use crate::state::AppState;
use crate::web::{Layout, PagePath, flash, period_label, render, render_status};

/// The node ids an account sees in the tree: everything for admin and finance; otherwise the
/// subtrees of the nodes they lead and their projects, plus the ancestors of those (for context).
pub fn visible_nodes(me: &Account, tree: &TreeView, parents: &Parents) -> Option<HashSet<i64>> {
    if me.sees_everything() {
        return None;
    }
    Some(
        tree.nodes
            .iter()
            .filter(|n| me.sees_node(n.id, parents))
            .map(|n| n.id)
            .collect(),
    )
}

struct Row {
    id: i64,
    name: String,
    is_project: bool,
    can_open: bool,
    indent: String,
    share: String,
    effective: String,
    gpu_hours: Vec<String>,
    money: String,
}

#[derive(askama::Template)]
#[template(path = "tree.html")]
struct TreePage {
    layout: Layout,
    period: String,
    time_zone: String,
    currency: String,
    capacity: Vec<tree_db::Capacity>,
    rows: Vec<Row>,
}

async fn tree_page(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let parents = &tree.parents;
    let visible = visible_nodes(&me, &tree, parents);
    let rows = tree
        .nodes
        .iter()
        .filter(|n| visible.as_ref().is_none_or(|v| v.contains(&n.id)))
        .map(|n| Row {
            id: n.id,
            name: n.name.clone(),
            is_project: n.is_project,
            can_open: me.may_view(n.id, parents),
            indent: format!("{:.2}em", n.depth as f64 * 1.25 + 0.4),
            share: crate::i18n::format::percent_bp(i64::from(n.share.bp())),
            effective: crate::i18n::format::basis_points(n.effective.bp_rounded()),
            gpu_hours: n
                .entitlements
                .iter()
                .map(|e| domain::format_milli_gpu_hours(e.milli_gpu_hours))
                .collect(),
            money: n.money_total.amount(),
        })
        .collect();
    render(&TreePage {
        layout: Layout::for_user(&session, &me, "/tree").await?,
        period: period_label(&tree.period_start, &tree.period_end),
        time_zone: tree.period_zone_name(&state.site.time_zone_name),
        currency: state.site.currency.clone(),
        capacity: tree.capacity.clone(),
        rows,
    })
}

struct ChildRow {
    id: i64,
    name: String,
    typed: String,
    invalid: bool,
    effective: String,
}

#[derive(askama::Template)]
#[template(path = "node.html")]
struct NodePage {
    layout: Layout,
    id: i64,
    name: String,
    share: String,
    effective: String,
    money: String,
    can_edit_shares: bool,
    children: Vec<ChildRow>,
    children_sum: String,
    shares_error: Option<String>,
    is_admin: bool,
    is_project: bool,
    has_parent: bool,
    admin_error: Option<String>,
    form_name: String,
    form_kind: String,
    form_share: String,
    form_rename: String,
    move_targets: Vec<(i64, String)>,
}

/// What a re-rendered node page keeps from a failed form.
#[derive(Default)]
struct NodeForm {
    typed_shares: HashMap<i64, String>,
    invalid: HashSet<i64>,
    shares_error: Option<String>,
    admin_error: Option<String>,
    /// The status of a re-render for a refusal (409) rather than bad input (422).
    refused: bool,
    name: String,
    kind: String,
    share: String,
    rename: String,
}

async fn node_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    form: NodeForm,
) -> Result<Response, AppError> {
    let tree = state.tree().await?;
    let parents = &tree.parents;
    let node = tree
        .node(id)
        .filter(|_| me.sees_node(id, parents))
        .ok_or_else(|| AppError::NotFound(t1("node-tree-not-found", "id", id.to_string())))?;
    if !me.may_view(id, parents) {
        return Err(AppError::Forbidden(t("node-outside-view")));
    }
    let status = if form.refused {
        StatusCode::CONFLICT
    } else if form.shares_error.is_some() || form.admin_error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let children: Vec<ChildRow> = tree
        .children(id)
        .map(|c| ChildRow {
            id: c.id,
            name: c.name.clone(),
            typed: form
                .typed_shares
                .get(&c.id)
                .cloned()
                .unwrap_or_else(|| crate::i18n::format::basis_points(i64::from(c.share.bp()))),
            invalid: form.invalid.contains(&c.id),
            effective: crate::i18n::format::basis_points(c.effective.bp_rounded()),
        })
        .collect();
    let move_targets = tree
        .nodes
        .iter()
        .filter(|n| {
            !n.is_project && !parents.is_ancestor_or_self(id, n.id) && Some(n.id) != node.parent_id
        })
        .map(|n| (n.id, n.name.clone()))
        .collect();
    let page = NodePage {
        layout: Layout::for_user(session, me, "/tree").await?,
        id,
        name: node.name.clone(),
        share: t1(
            "node-percent",
            "value",
            crate::i18n::format::basis_points(i64::from(node.share.bp())),
        ),
        effective: crate::i18n::format::basis_points(node.effective.bp_rounded()),
        money: node.money_total.display(&state.site.currency),
        can_edit_shares: me.leads(id, parents),
        children,
        children_sum: crate::i18n::format::basis_points(node.children_bp),
        shares_error: form.shares_error,
        is_admin: me.is_admin(),
        is_project: node.is_project,
        has_parent: node.parent_id.is_some(),
        admin_error: form.admin_error,
        form_name: form.name,
        form_kind: if form.kind.is_empty() {
            "group".into()
        } else {
            form.kind
        },
        form_share: form.share,
        form_rename: if form.rename.is_empty() {
            node.name.clone()
        } else {
            form.rename
        },
        move_targets,
    };
    render_status(status, &page)
}

async fn node_get(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    node_page(&state, &session, &me, id, NodeForm::default()).await
}

/// The shares form: `share_<child id>` = a percentage, for any subset of the children.
async fn shares_post(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(fields): Form<Vec<(String, String)>>,
) -> Result<Response, AppError> {
    let mut form = NodeForm::default();
    let mut changes = Vec::new();
    let mut errors = Vec::new();
    for (key, value) in &fields {
        let Some(child) = key.strip_prefix("share_") else {
            continue;
        };
        let Ok(child) = child.parse::<i64>() else {
            return Err(AppError::invalid(
                "share",
                t1("node-not-a-share-field", "key", crate::domain::quote(key)),
            ));
        };
        form.typed_shares.insert(child, value.clone());
        match Share::parse_percent(value) {
            Ok(s) => changes.push((child, s)),
            Err(e) => {
                form.invalid.insert(child);
                errors.push(e.message());
            }
        }
    }
    if errors.is_empty() {
        match tree_db::set_child_shares(&state.pool, &state.site, &me, id, &changes).await {
            Ok(()) => {
                flash(&session, t("node-shares-saved")).await?;
                return Ok(Redirect::to(&format!("/tree/nodes/{id}")).into_response());
            }
            Err(AppError::Invalid { message, .. }) => errors.push(message),
            Err(other) => return Err(other),
        }
    }
    form.shares_error = Some(errors.join("; "));
    node_page(&state, &session, &me, id, form).await
}

#[derive(serde::Deserialize, Default)]
struct ChildForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    share: String,
}

async fn child_post(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<ChildForm>,
) -> Result<Response, AppError> {
    let kind = match f.kind.as_str() {
        "project" => Ok(NodeKind::Project),
        "group" | "" => Ok(NodeKind::Group),
        other => Err(AppError::invalid(
            "kind",
            t1("node-bad-kind", "got", crate::domain::quote(other)),
        )),
    };
    let result = match (kind, Share::parse_percent(&f.share)) {
        (Err(e), _) => Err(e),
        (Ok(kind), Ok(share)) => tree_db::create_node(&state.pool, &me, id, &f.name, kind, share)
            .await
            .map(|_| ()),
        (Ok(_), Err(e)) => Err(AppError::invalid("share", e.message())),
    };
    match result {
        Ok(()) => {
            flash(&session, t1("node-child-added", "name", f.name.trim())).await?;
            Ok(Redirect::to(&format!("/tree/nodes/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            let form = NodeForm {
                admin_error: Some(message),
                name: f.name,
                kind: f.kind,
                share: f.share,
                ..NodeForm::default()
            };
            node_page(&state, &session, &me, id, form).await
        }
        Err(other) => Err(other),
    }
}

#[derive(serde::Deserialize, Default)]
struct RenameForm {
    #[serde(default)]
    name: String,
}

async fn rename_post(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<RenameForm>,
) -> Result<Response, AppError> {
    match tree_db::rename_node(&state.pool, &me, id, &f.name).await {
        Ok(()) => {
            flash(&session, t("node-renamed")).await?;
            Ok(Redirect::to(&format!("/tree/nodes/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            let rename = if f.name.is_empty() {
                " ".into()
            } else {
                f.name
            };
            node_page(
                &state,
                &session,
                &me,
                id,
                NodeForm {
                    admin_error: Some(message),
                    rename,
                    ..NodeForm::default()
                },
            )
            .await
        }
        Err(other) => Err(other),
    }
}

#[derive(serde::Deserialize, Default)]
struct MoveForm {
    #[serde(default)]
    parent: String,
}

async fn move_post(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<MoveForm>,
) -> Result<Response, AppError> {
    let result = match f.parent.trim().parse::<i64>() {
        Ok(parent) => tree_db::move_node(&state.pool, &me, id, parent).await,
        Err(_) => Err(AppError::invalid("parent", t("node-choose-parent"))),
    };
    match result {
        Ok(()) => {
            flash(&session, t("node-moved")).await?;
            Ok(Redirect::to(&format!("/tree/nodes/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            node_page(
                &state,
                &session,
                &me,
                id,
                NodeForm {
                    admin_error: Some(message),
                    ..NodeForm::default()
                },
            )
            .await
        }
        Err(other) => Err(other),
    }
}

async fn archive_post(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    match tree_db::archive_node(&state.pool, &me, id).await {
        Ok(()) => {
            flash(&session, t("node-archived")).await?;
            Ok(Redirect::to("/tree").into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            node_page(
                &state,
                &session,
                &me,
                id,
                NodeForm {
                    admin_error: Some(message),
                    ..NodeForm::default()
                },
            )
            .await
        }
        Err(AppError::Refused { message, .. }) => {
            node_page(
                &state,
                &session,
                &me,
                id,
                NodeForm {
                    admin_error: Some(message),
                    refused: true,
                    ..NodeForm::default()
                },
            )
            .await
        }
        Err(other) => Err(other),
    }
}

#[derive(askama::Template)]
#[template(path = "project.html")]
struct ProjectPage {
    layout: Layout,
    id: i64,
    name: String,
    share: String,
    effective: String,
    period: String,
    entitlement_money: String,
    budget: String,
    budget_is_default: bool,
    cap: String,
    self_service: i32,
    entitlements: Vec<(String, String, String, String)>,
    members: Vec<(i64, String)>,
    can_manage_members: bool,
    member_error: Option<String>,
    form_member: String,
    can_edit_budget: bool,
    is_admin: bool,
    balance: String,
    /// What the running protected runs hold of the balance (the part of their minimum-runtime
    /// cost not charged yet) and what is left for new runs and contracts, when they hold any.
    held: Option<(String, String)>,
    later_balances: Vec<(String, String)>,
    contracts: Vec<(i64, String, String, String)>,
    budget_error: Option<String>,
    currency: String,
    form_budget: String,
    form_cap: String,
    form_self_service: String,
    form_thresholds: String,
    thresholds: String,
    /// Runs, fair-share standing, owed vs received, spend and idle flags.
    now: std::sync::Arc<crate::web::project::Standing>,
    /// The waiting runs of `now` as the viewer may see them
    /// ([`crate::web::project::RunNow::for_reader`]).
    waiting: Vec<crate::web::project::RunNow>,
    /// The standing's siblings as this viewer may see them: a sibling outside what the tree
    /// shows them keeps its rank, without its name, share or usage.
    siblings: Vec<crate::web::project::SiblingRow>,
    idle_threshold: u8,
    /// The project's idle flags with the viewer's right to stop them.
    idle: Vec<crate::web::home::IdleView>,
    idle_error: Option<(i64, String, String)>,
}

/// What a re-rendered project page keeps from a failed form.
#[derive(Default)]
struct ProjectForm {
    member_error: Option<String>,
    member: String,
    budget_error: Option<String>,
    budget: Option<(String, String, String, String)>,
}

async fn project_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    form: ProjectForm,
) -> Result<Response, AppError> {
    let (tree, facts) = crate::web::project::tree_and_facts(state, id).await?;
    let parents = &tree.parents;
    // A project the viewer may not see answers as a missing one: its existence is not told.
    let node = tree
        .node(id)
        .filter(|n| n.is_project && me.may_view(id, parents))
        .ok_or_else(|| AppError::NotFound(t1("err-no-project-id", "id", id.to_string())))?;
    let settings = &facts.settings;
    let now = crate::web::project::cached_standing(state, &tree, node, &facts).await?;
    let visible = visible_nodes(me, &tree, parents);
    let siblings = now
        .siblings
        .iter()
        .map(|s| {
            if s.me || visible.as_ref().is_none_or(|v| v.contains(&s.id)) {
                s.clone()
            } else {
                let hidden = "\u{2014}".to_string();
                crate::web::project::SiblingRow {
                    id: 0,
                    name: t("project-sibling-hidden"),
                    share: hidden.clone(),
                    usage: hidden.clone(),
                    usage_pct: hidden,
                    rank: s.rank,
                    me: false,
                }
            }
        })
        .collect();
    let waiting = now
        .waiting
        .iter()
        .map(|r| r.for_reader(state, me, parents))
        .collect();
    let can_stop = me.leads(id, parents);
    let idle = now
        .idle
        .iter()
        .cloned()
        .map(|mut f| {
            f.can_stop = can_stop;
            f
        })
        .collect();
    let cur = &state.site.currency;
    let budget = facts.budget;
    // Read live, not cached with the facts: runs start and are charged without touching the
    // project's counter. The contract and run previews count the balance less this.
    let held = {
        let mut conn = state.pool.acquire().await?;
        crate::runs::held_by_runs(&mut conn, id).await?
    };
    let status = if form.member_error.is_some() || form.budget_error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let (form_budget, form_cap, form_self_service, form_thresholds) =
        form.budget.unwrap_or_else(|| {
            (
                settings
                    .period_budget_minor
                    .map(|v| Money(v).input_value())
                    .unwrap_or_default(),
                settings
                    .money_cap_minor
                    .map(|v| Money(v).input_value())
                    .unwrap_or_default(),
                settings.self_service_gpu_hours.to_string(),
                settings
                    .alert_thresholds
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        });
    let page = ProjectPage {
        layout: Layout::for_user(session, me, "/tree").await?,
        id,
        name: node.name.clone(),
        share: i18n::format::percent_bp(i64::from(node.share.bp())),
        effective: crate::i18n::format::basis_points(node.effective.bp_rounded()),
        period: period_label(&tree.period_start, &tree.period_end),
        entitlement_money: node.money_total.display(cur),
        budget: budget.display(cur),
        // A money cap below the entitlement's value is the budget then, not the default.
        budget_is_default: settings.period_budget_minor.is_none()
            && settings.money_cap_minor.is_none_or(|cap| cap > budget.0),
        cap: settings
            .money_cap_minor
            .map_or_else(|| i18n::t("project-none"), |c| Money(c).display(cur)),
        self_service: settings.self_service_gpu_hours,
        entitlements: tree
            .capacity
            .iter()
            .zip(&node.entitlements)
            .map(|(c, e)| {
                (
                    c.cluster.clone(),
                    c.gpu_model.clone(),
                    domain::format_milli_gpu_hours(e.milli_gpu_hours),
                    e.money.display(cur),
                )
            })
            .collect(),
        siblings,
        members: settings.members.clone(),
        can_manage_members: me.leads(id, parents),
        member_error: form.member_error,
        form_member: form.member,
        can_edit_budget: me.leads_strictly_above(id, parents),
        is_admin: me.is_admin(),
        balance: facts.balance.display(cur),
        held: (held > 0).then(|| {
            (
                Money(held).display(cur),
                Money((facts.balance.0 - held).max(0)).display(cur),
            )
        }),
        later_balances: facts
            .later_balances
            .iter()
            .map(|(month, b)| {
                (
                    crate::i18n::format::month_year(crate::i18n::current(), *month),
                    b.display(cur),
                )
            })
            .collect(),
        contracts: facts
            .contracts
            .iter()
            .map(|c| {
                (
                    c.id,
                    i18n::ta(
                        "run-what-on",
                        &[
                            ("gpus", &c.gpus),
                            ("model", &c.gpu_model),
                            ("cluster", &c.cluster),
                        ],
                    ),
                    crate::web::contracts::window_label(
                        c.starts_at,
                        c.ends_at,
                        &state.site.time_zone,
                    ),
                    format!(
                        "{} ({})",
                        Money(c.price_minor).display(cur),
                        crate::web::contracts::state_words(c, cur)
                    ),
                )
            })
            .collect(),
        budget_error: form.budget_error,
        currency: cur.clone(),
        form_budget,
        form_cap,
        form_self_service,
        thresholds: if settings.alert_thresholds.is_empty() {
            i18n::t("project-none")
        } else {
            settings
                .alert_thresholds
                .iter()
                .map(|t| i18n::t1("percent", "n", t.to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        },
        form_thresholds,
        now,
        waiting,
        idle_threshold: state.site.idle_utilization_percent,
        idle,
        idle_error: None,
    };
    render_status(status, &page)
}

async fn project_get(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    project_page(&state, &session, &me, id, ProjectForm::default()).await
}

#[derive(serde::Deserialize, Default)]
struct BudgetForm {
    #[serde(default)]
    period_budget: String,
    #[serde(default)]
    money_cap: String,
    #[serde(default)]
    self_service_gpu_hours: String,
    #[serde(default)]
    alert_thresholds: String,
}

/// Parses alert thresholds typed as `50, 75, 90` (whole percentages separated by commas,
/// spaces or semicolons; empty for none). On a page whose language writes a decimal comma
/// (Spanish, Basque), a comma between two digits (`12,5`) is a decimal number, not two
/// thresholds: refused, so 12.5 % is never read as 12 % and 5 %.
fn thresholds(input: &str) -> Result<Vec<i32>, AppError> {
    let decimal_comma = crate::i18n::current() != crate::i18n::Lang::En;
    let chars: Vec<char> = input.chars().collect();
    if decimal_comma
        && chars
            .windows(3)
            .any(|w| w[0].is_ascii_digit() && w[1] == ',' && w[2].is_ascii_digit())
    {
        return Err(AppError::invalid(
            "alert_thresholds",
            i18n::t1(
                "budget-err-thresholds-decimal",
                "got",
                domain::quote(input.trim()),
            ),
        ));
    }
    input
        .split([',', ' ', ';'])
        .filter(|t| !t.trim().is_empty())
        .map(|t| {
            domain::int_in(t.trim().trim_end_matches('%'), "an alert threshold", 1, 100)
                .map(|v| v as i32)
                .map_err(|m| AppError::invalid("alert_thresholds", m))
        })
        .collect()
}

/// Parses an optional amount: empty means none.
fn optional_money(input: &str, field: &'static str) -> Result<Option<i64>, AppError> {
    if input.trim().is_empty() {
        return Ok(None);
    }
    Money::parse(input)
        .map(|m| Some(m.0))
        .map_err(|m| AppError::invalid(field, m))
}

async fn budget_post(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<BudgetForm>,
) -> Result<Response, AppError> {
    let parsed = (|| {
        Ok::<_, AppError>(BudgetUpdate {
            period_budget_minor: optional_money(&f.period_budget, "period_budget")?,
            money_cap_minor: optional_money(&f.money_cap, "money_cap")?,
            self_service_gpu_hours: domain::int_in(
                &f.self_service_gpu_hours,
                "the self-service limit",
                0,
                100_000,
            )
            .map_err(|m| AppError::invalid("self_service_gpu_hours", m))?
                as i32,
            alert_thresholds: Some(thresholds(&f.alert_thresholds)?),
        })
    })();
    let result = match parsed {
        Ok(update) => {
            tree_db::update_project(
                &state.pool,
                &me,
                id,
                &update,
                &*state.tree().await?,
                (&state.site, jiff::Timestamp::now()),
            )
            .await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => {
            flash(&session, t("project-budget-saved")).await?;
            Ok(Redirect::to(&format!("/projects/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. }) => {
            let form = ProjectForm {
                budget_error: Some(message),
                budget: Some((
                    f.period_budget,
                    f.money_cap,
                    f.self_service_gpu_hours,
                    f.alert_thresholds,
                )),
                ..ProjectForm::default()
            };
            project_page(&state, &session, &me, id, form).await
        }
        Err(other) => Err(other),
    }
}

#[derive(serde::Deserialize, Default)]
struct MemberForm {
    #[serde(default)]
    user: String,
}

async fn member_change(
    state: AppState,
    session: Session,
    me: Account,
    id: i64,
    user: String,
    add: bool,
) -> Result<Response, AppError> {
    match tree_db::set_member(&state.pool, &me, id, &user, add).await {
        Ok(()) => {
            flash(
                &session,
                t1(
                    if add {
                        "project-member-added"
                    } else {
                        "project-member-removed"
                    },
                    "name",
                    user.trim(),
                ),
            )
            .await?;
            Ok(Redirect::to(&format!("/projects/{id}")).into_response())
        }
        Err(AppError::Invalid { message, .. } | AppError::NotFound(message)) => {
            project_page(
                &state,
                &session,
                &me,
                id,
                ProjectForm {
                    member_error: Some(message),
                    member: user,
                    ..ProjectForm::default()
                },
            )
            .await
        }
        Err(other) => Err(other),
    }
}

async fn member_add(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<MemberForm>,
) -> Result<Response, AppError> {
    member_change(state, session, me, id, f.user, true).await
}

async fn member_remove(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(f): Form<MemberForm>,
) -> Result<Response, AppError> {
    member_change(state, session, me, id, f.user, false).await
}

/// Tree, node and project routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/tree", get(tree_page))
        .route("/tree/nodes/{id}", get(node_get))
        .route("/tree/nodes/{id}/shares", post(shares_post))
        .route("/tree/nodes/{id}/children", post(child_post))
        .route("/tree/nodes/{id}/rename", post(rename_post))
        .route("/tree/nodes/{id}/move", post(move_post))
        .route("/tree/nodes/{id}/archive", post(archive_post))
        .route("/projects/{id}", get(project_get))
        .route("/projects/{id}/budget", post(budget_post))
        .route("/projects/{id}/members", post(member_add))
        .route("/projects/{id}/members/remove", post(member_remove))
}

#[cfg(test)]
mod tests {
    use super::thresholds;
    use crate::i18n::{Lang, sync_scope};

    #[test]
    fn thresholds_never_read_a_decimal_comma_as_two() {
        let read = |lang, s: &str| sync_scope(lang, || thresholds(s)).map_err(|e| e.to_string());
        for lang in [Lang::En, Lang::Es, Lang::Eu] {
            assert_eq!(read(lang, "50, 75, 90%"), Ok(vec![50, 75, 90]), "{lang:?}");
            assert_eq!(read(lang, "50 75;90"), Ok(vec![50, 75, 90]), "{lang:?}");
            assert_eq!(read(lang, ""), Ok(vec![]), "{lang:?}");
        }
        // English writes a decimal point: a comma between digits separates two thresholds.
        assert_eq!(read(Lang::En, "50,75"), Ok(vec![50, 75]));
        // Spanish and Basque write a decimal comma: 12,5 is twelve and a half, refused.
        for lang in [Lang::Es, Lang::Eu] {
            let err = read(lang, "12,5").unwrap_err();
            assert!(err.contains("12,5") && err.contains("50, 75, 90"), "{err}");
            assert!(read(lang, "50,75, 90").is_err(), "{lang:?}");
        }
    }
}
