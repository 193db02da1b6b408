//! Run pages: the submit form with a cost preview, the run list with filters, the run page
//! (timeline, placements, why it waits, cancel, approve and deny) and the lead's approvals
//! inbox. Every rule lives in [`crate::runs`]; these handlers only parse forms and render.

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::State;

use crate::web::input::{CheckedForm, Form, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use tower_sessions::Session;

use crate::auth::{Account, CurrentUser, Role};
use crate::db::inventory;
use crate::domain;
use crate::error::AppError;
use crate::i18n;
use crate::ledger::to_jiff;
use crate::runs::{self, Filter, NewRun, RunRow};
use crate::state::AppState;
use crate::web::{Layout, PagePath, flash, render_status};

/// One `<option>` of a select.
struct Opt {
    value: String,
    label: String,
    selected: bool,
}

/// Options from values, marking the one equal to `selected` (case-insensitively), with a
/// leading "any" option labelled `any` when given.
fn options(
    values: impl IntoIterator<Item = String>,
    selected: &str,
    any: Option<&str>,
) -> Vec<Opt> {
    let mut out: Vec<Opt> = any
        .map(|label| Opt {
            value: String::new(),
            label: label.to_string(),
            selected: selected.is_empty(),
        })
        .into_iter()
        .collect();
    out.extend(values.into_iter().map(|v| Opt {
        selected: v.eq_ignore_ascii_case(selected),
        label: v.clone(),
        value: v,
    }));
    out
}

/// `opts` with `typed` added, selected, when none of them is it: a refused form gives back
/// the value as it came (an unknown name, one with a control character shown as a symbol).
fn with_typed(mut opts: Vec<Opt>, typed: &str) -> Vec<Opt> {
    if !typed.is_empty() && !opts.iter().any(|o| o.selected) {
        opts.push(Opt {
            value: typed.to_string(),
            label: typed.to_string(),
            selected: true,
        });
    }
    opts
}

/// An instant in the site's time zone.
fn local(state: &AppState, t: time::OffsetDateTime) -> String {
    domain::format_local(to_jiff(t), &state.site.time_zone)
}

/// Parses a duration typed as whole minutes (`90`) or hours and minutes (`1:30`) into
/// seconds; the error names `field` and says what was typed.
fn parse_minutes(typed: &str, field: &'static str, key: &str) -> Result<i64, AppError> {
    let t = typed.trim();
    let bad = || AppError::invalid(field, i18n::t1(key, "got", crate::domain::quote(t)));
    // Digits and at most one colon: no signs ("-0:30" is not half an hour).
    if !t.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return Err(bad());
    }
    let minutes = match t.split_once(':') {
        Some((h, m)) => {
            let h: i64 = h.trim().parse().map_err(|_| bad())?;
            let m: i64 = m.trim().parse().map_err(|_| bad())?;
            if h < 0 || !(0..60).contains(&m) {
                return Err(bad());
            }
            h.checked_mul(60).and_then(|h| h.checked_add(m))
        }
        None => t.parse::<i64>().ok(),
    }
    .ok_or_else(bad)?;
    if minutes < 0 {
        return Err(bad());
    }
    minutes.checked_mul(60).ok_or_else(bad)
}

/// Parses an environment textarea (`field`: `env` or `secret_env`): one `NAME=value` per
/// line, blank lines ignored.
fn parse_env(text: &str, field: &'static str) -> Result<BTreeMap<String, String>, AppError> {
    let mut env = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err(AppError::invalid(
                field,
                i18n::t2(
                    "err-env-line",
                    "line",
                    n + 1,
                    "got",
                    crate::domain::quote(line.trim()),
                ),
            ));
        };
        let name = name.trim().to_string();
        if env.insert(name.clone(), value.to_string()).is_some() {
            return Err(AppError::invalid(
                field,
                i18n::t2("err-env-twice", "line", n + 1, "name", &name),
            ));
        }
    }
    Ok(env)
}

/// The submit form's fields, kept as typed so an error re-renders them unchanged.
#[derive(serde::Deserialize, Default, Clone)]
struct RunForm {
    #[serde(default)]
    project: String,
    #[serde(default)]
    cluster: String,
    #[serde(default)]
    gpu_model: String,
    #[serde(default)]
    gpus: String,
    /// Minutes or h:mm.
    #[serde(default)]
    min_runtime: String,
    /// Minutes or h:mm.
    #[serde(default)]
    time_limit: String,
    #[serde(default)]
    priority: String,
    /// Present (`on`) when the checkbox is ticked.
    #[serde(default)]
    resumable: Option<String>,
    #[serde(default)]
    command: String,
    #[serde(default)]
    workdir: String,
    /// One `NAME=value` per line.
    #[serde(default)]
    env: String,
    /// One `NAME=value` per line, kept secret.
    #[serde(default)]
    secret_env: String,
    /// `preview` or `submit`.
    #[serde(default)]
    action: String,
    /// A random key made when the form is first shown, kept across previews: submitting it
    /// twice (a double click, the back button) gives the first run again.
    #[serde(default)]
    once: String,
}

impl RunForm {
    /// The form a new submission starts from.
    fn defaults() -> Self {
        Self {
            gpus: "1".into(),
            min_runtime: "0".into(),
            time_limit: "60".into(),
            priority: "0".into(),
            ..Self::default()
        }
    }

    /// Parses the typed fields into a submission; errors name the form's field.
    fn parse(&self) -> Result<NewRun, AppError> {
        let gpus = crate::domain::typed_integer(&self.gpus).ok_or_else(|| {
            AppError::invalid(
                "gpus",
                i18n::t1(
                    "err-gpus-whole",
                    "got",
                    crate::domain::quote(self.gpus.trim()),
                ),
            )
        })?;
        let min_runtime_s =
            parse_minutes(&self.min_runtime, "min_runtime", "err-min-runtime-format")?;
        let time_limit_s = parse_minutes(&self.time_limit, "time_limit", "err-time-limit-format")?;
        let priority = match self.priority.trim() {
            "" => 0,
            p => crate::domain::typed_integer(p)
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| {
                    AppError::invalid(
                        "priority",
                        i18n::t1("err-priority-whole", "got", crate::domain::quote(p)),
                    )
                })?,
        };
        let workdir = Some(self.workdir.trim().to_string()).filter(|w| !w.is_empty());
        Ok(NewRun {
            project: self.project.clone(),
            cluster: self.cluster.clone(),
            gpu_model: self.gpu_model.clone(),
            gpus,
            min_runtime_s,
            time_limit_s,
            priority,
            resumable: self.resumable.is_some(),
            command: self.command.clone(),
            workdir,
            env: parse_env(&self.env, "env")?,
            secret_env: parse_env(&self.secret_env, "secret_env")?,
        })
    }
}

/// The run form's fields that take text, by their names in the form.
const FORM_FIELDS: [&str; 11] = [
    "project",
    "cluster",
    "gpu_model",
    "gpus",
    "min_runtime",
    "time_limit",
    "priority",
    "command",
    "workdir",
    "env",
    "secret_env",
];

/// The environment text `text` with the values of secret variables left out (`NAME=`): every
/// value of the secret environment (`all`), and in the plain one those whose names look secret
/// ([`runs::looks_secret`]). Whether any value was left out comes with it. A refused form
/// never gives a secret back to the page: the person types it again.
fn without_secret_values(text: &str, all: bool) -> (String, bool) {
    let mut left_out = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| match line.split_once('=') {
            Some((name, value)) if (all || runs::looks_secret(name)) && !value.is_empty() => {
                left_out = true;
                format!("{name}=")
            }
            // A line that is no `NAME=value` may be a secret typed without its name.
            None if all && !line.trim().is_empty() => {
                left_out = true;
                String::new()
            }
            _ => line.to_string(),
        })
        .filter(|l| !l.is_empty())
        .collect();
    (lines.join("\n"), left_out)
}

/// Which form field an error from [`runs::check`] belongs to (the domain names durations in
/// seconds; the form takes minutes). An unknown name is told by its message, which names the
/// form's value in the page's language.
fn form_field(e: &AppError, form: &RunForm) -> Option<&'static str> {
    let unknown =
        |m: &str, key: &str, value: &str| m == i18n::t1(key, "name", crate::domain::quote(value));
    match e {
        AppError::Invalid { field, .. } => field.map(|f| match f {
            "min_runtime_s" => "min_runtime",
            "time_limit_s" => "time_limit",
            other => other,
        }),
        // A control character in one of the form's fields (the text rule).
        AppError::InvalidText { field, .. } => {
            FORM_FIELDS.iter().copied().find(|f| *f == field.as_str())
        }
        AppError::Refused {
            code: "larger_than_cluster",
            ..
        } => Some("gpus"),
        AppError::Refused {
            code: "model_not_in_cluster",
            ..
        } => Some("gpu_model"),
        AppError::Forbidden(_) => Some("project"),
        AppError::NotFound(m) if unknown(m, "contract-err-no-project", &form.project) => {
            Some("project")
        }
        AppError::NotFound(m) if unknown(m, "contract-err-no-cluster", &form.cluster) => {
            Some("cluster")
        }
        AppError::NotFound(m) if unknown(m, "contract-err-no-model", &form.gpu_model) => {
            Some("gpu_model")
        }
        _ => None,
    }
}

/// Errors a form shows on the page rather than as an error page.
fn shown_on_form(e: &AppError) -> bool {
    matches!(
        e,
        AppError::Invalid { .. }
            | AppError::Refused { .. }
            | AppError::NotFound(_)
            | AppError::Forbidden(_)
            | AppError::Conflict(_)
    )
}

#[derive(askama::Template)]
#[template(path = "runs/form.html")]
struct FormPage {
    layout: Layout,
    form: RunForm,
    projects: Vec<Opt>,
    clusters: Vec<Opt>,
    models: Vec<Opt>,
    /// The preview in words, after "Preview cost".
    preview: Option<String>,
    /// Whether the previewed run needs a lead's approval.
    needs_approval: bool,
    /// An error with no field of its own.
    error: Option<String>,
    /// An error next to this field.
    field_error: Option<(&'static str, String)>,
    /// Whether secret values were left out of the refused form, for the person to type again.
    secrets_left_out: bool,
    max_min_runtime: String,
}

impl FormPage {
    /// The error message of `field`, if it is the one at fault.
    fn err(&self, field: &str) -> Option<&str> {
        self.field_error
            .as_ref()
            .filter(|(f, _)| *f == field)
            .map(|(_, m)| m.as_str())
    }
}

/// Whether `me` may submit runs somewhere: a researcher member of a project, a lead or an
/// admin.
pub fn can_submit(me: &Account) -> bool {
    me.has(crate::auth::Role::Researcher) && !me.projects.is_empty()
        || me.lead_nodes().next().is_some()
        || me.is_admin()
}

async fn form_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    mut form: RunForm,
    preview: Option<(String, bool)>,
    error: Option<AppError>,
) -> Result<Response, AppError> {
    let tree = state.tree_for(me).await?;
    let projects: Vec<String> = tree
        .nodes
        .iter()
        .filter(|n| {
            n.is_project
                && (me.has(crate::auth::Role::Researcher) && me.projects.contains(&n.id)
                    || me.leads(n.id, &tree.parents))
        })
        .map(|n| n.name.clone())
        .collect();
    let inv = inventory::clusters(&state.pool).await?;
    let mut models: Vec<String> = inv
        .iter()
        .flat_map(|c| c.gpus.iter().map(|(m, _)| m.clone()))
        .collect();
    models.sort();
    models.dedup();
    // A fresh form starts on the first of each list; a typed value is kept as typed.
    if form.project.is_empty() {
        form.project = projects.first().cloned().unwrap_or_default();
    }
    if form.cluster.is_empty() {
        form.cluster = inv.first().map(|c| c.name.clone()).unwrap_or_default();
    }
    if form.gpu_model.is_empty() {
        form.gpu_model = inv
            .iter()
            .find(|c| c.name == form.cluster)
            .and_then(|c| c.gpus.first())
            .map(|(m, _)| m.clone())
            .or_else(|| models.first().cloned())
            .unwrap_or_default();
    }
    if form.once.is_empty() {
        form.once = crate::auth::random_hex(16);
    }
    let status = error.as_ref().map_or(StatusCode::OK, AppError::status);
    // A refused form keeps the names of secret variables, never their values.
    let mut secrets_left_out = false;
    if error.is_some() {
        let (secret_env, a) = without_secret_values(&form.secret_env, true);
        let (env, b) = without_secret_values(&form.env, false);
        (form.secret_env, form.env, secrets_left_out) = (secret_env, env, a || b);
    }
    let (error, field_error) = match error {
        None => (None, None),
        Some(e) => match form_field(&e, &form) {
            Some(f) => (None, Some((f, e.public_message()))),
            None => (Some(e.public_message()), None),
        },
    };
    let (preview, needs_approval) = match preview {
        Some((text, approval)) => (Some(text), approval),
        None => (None, false),
    };
    render_status(
        status,
        &FormPage {
            layout: Layout::for_user(session, me, "/runs/new").await?,
            projects: with_typed(options(projects, &form.project, None), &form.project),
            clusters: with_typed(
                options(inv.iter().map(|c| c.name.clone()), &form.cluster, None),
                &form.cluster,
            ),
            models: with_typed(options(models, &form.gpu_model, None), &form.gpu_model),
            form,
            preview,
            needs_approval,
            error,
            field_error,
            secrets_left_out,
            max_min_runtime: i18n::format::duration(state.site.max_min_runtime_s),
        },
    )
}

async fn new_run(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Query(prefill): Query<BTreeMap<String, String>>,
) -> Result<Response, AppError> {
    let mut form = RunForm::defaults();
    if let Some(p) = prefill.get("project") {
        form.project = p.clone();
    }
    form_page(&state, &session, &me, form, None, None).await
}

async fn post_run(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    CheckedForm(mut form, refused): CheckedForm<RunForm>,
) -> Result<Response, AppError> {
    // A control character: the run form again, with the message next to its field.
    if let Some(e) = refused {
        return form_page(&state, &session, &me, form, None, Some(e)).await;
    }
    let parsed = form.parse();
    // The one-time field is the form's idempotency key, with the request's fingerprint: a
    // double click answers with the first run; a form sent again with other values (back,
    // edit, submit) is shown again with a new key, so that it can be sent as a new run.
    let once = form.once.trim().to_string();
    let key = Some(once.as_str()).filter(|k| (1..=255).contains(&k.len()));
    let fingerprint = parsed
        .as_ref()
        .ok()
        .map(|run| run.fingerprint(&state.secret_key));
    if form.action == "submit"
        && let (Some(key), Some(fingerprint)) = (key, &fingerprint)
    {
        match runs::key_use(&state.pool, &me, key, fingerprint).await? {
            runs::KeyUse::New => {}
            runs::KeyUse::Repeat(earlier) => {
                flash(
                    &session,
                    i18n::t1("run-already-submitted", "id", earlier.id.to_string()),
                )
                .await?;
                return Ok(Redirect::to(&format!("/runs/{}", earlier.id)).into_response());
            }
            runs::KeyUse::Other { id } => {
                form.once = String::new();
                let e = AppError::Conflict(i18n::t1("run-form-resent", "id", id.to_string()));
                return form_page(&state, &session, &me, form, None, Some(e)).await;
            }
        }
    }
    let tree = state.tree_for(&me).await?;
    let checked = match parsed {
        Ok(run) => runs::check(&state.pool, &state.site, &me, &tree, run).await,
        Err(e) => Err(e),
    };
    let checked = match checked {
        Ok(c) => c,
        Err(e) if shown_on_form(&e) => {
            return form_page(&state, &session, &me, form, None, Some(e)).await;
        }
        Err(e) => return Err(e),
    };
    let preview = checked.preview.describe(&state.site.currency);
    if form.action != "submit" {
        let approval = checked.preview.needs_approval;
        return form_page(&state, &session, &me, form, Some((preview, approval)), None).await;
    }
    let key = key
        .zip(fingerprint.as_ref())
        .map(|(key, fingerprint)| runs::Key { key, fingerprint });
    let run = runs::submit(&state, &me, &checked, key).await?;
    let (id, run_state) = (run.id, run.state);
    let notice = if run.repeated {
        i18n::t1("run-already-submitted", "id", id.to_string())
    } else if run_state == "waiting_approval" {
        i18n::t1("run-submitted-approval", "id", id.to_string())
    } else {
        i18n::t2(
            "run-submitted-queued",
            "id",
            id.to_string(),
            "preview",
            &preview,
        )
    };
    flash(&session, notice).await?;
    Ok(Redirect::to(&format!("/runs/{id}")).into_response())
}

/// A run in a table, formatted.
struct RowView {
    id: i64,
    project: String,
    cluster: String,
    gpu_model: String,
    gpus: i32,
    /// In words (`waiting approval`).
    state: String,
    /// For a CSS class (`waiting_approval`).
    state_class: String,
    submitted_by: String,
    submitted_at: String,
    min_runtime: String,
    protected_gpu_hours: String,
    /// Whether its minimum runtime protects any GPU-hours (shown beside it).
    protected: bool,
    command: String,
    /// For queued runs: why it waits and when it may start.
    waiting: Option<String>,
}

/// Why a queued run waits, in words, with its estimated start.
fn waiting_words(state: &AppState, r: &RunRow) -> Option<String> {
    if r.state != "queued" {
        return None;
    }
    Some(reason_words(
        state,
        r.wait_reason.as_deref(),
        r.wait_note.as_deref(),
        r.position_in_project,
        r.estimated_start,
    ))
}

/// Why a queued run waits, in the page's language, with its place in its project's line (when
/// the reason names it) and its estimated start: the structured `note` the pass wrote beside
/// its `words`, rendered with the organisation's time zone (the API's `words` give instants in
/// UTC, which an English page put beside an estimate in the organisation's zone); the `words`
/// where a run has no note.
pub fn reason_words(
    state: &AppState,
    words: Option<&str>,
    note: Option<&i18n::wait::WaitNote>,
    place: Option<i64>,
    estimate: Option<time::OffsetDateTime>,
) -> String {
    let lang = i18n::current();
    let reason = match (words, note) {
        (None, _) => i18n::t("run-waiting-next-pass"),
        (Some(_), Some(note)) => note.render(&i18n::wait::Render {
            lang,
            currency: &state.site.currency,
            time_zone: &state.site.time_zone,
        }),
        (Some(words), None) => words.to_string(),
    };
    // The place in line is computed when read (it is not part of the stored reason).
    let reason = match (note, place) {
        (Some(note), Some(place)) if note.names_place_in_line() => {
            format!("{reason}; {}", i18n::t1("wait-position", "position", place))
        }
        _ => reason,
    };
    match estimate {
        Some(t) => i18n::t2(
            "run-waiting-estimated",
            "reason",
            reason,
            "at",
            local(state, t),
        ),
        None => i18n::t1("run-waiting-no-estimate", "reason", reason),
    }
}

/// A code (`cancel_requested`) in the page's language: the message `PREFIX-CODE`, else the
/// code's own words (`cancel requested`).
fn code_words(prefix: &str, code: &str) -> String {
    let key = format!("{prefix}-{code}");
    let words = i18n::t(&key);
    if words == key {
        code.replace('_', " ")
    } else {
        words
    }
}

/// A timeline entry's kind in the page's language (`cancel requested`, `kanporatua`).
fn event_kind_words(kind: &str) -> String {
    code_words("event-kind", kind)
}

/// A run state in the page's language (`waiting approval`, `en cola`, `ilaran`).
pub fn state_words(state: &str) -> String {
    code_words("state", state)
}

fn row_view(state: &AppState, r: &RunRow) -> RowView {
    RowView {
        id: r.id,
        project: r.project.clone(),
        cluster: r.cluster.clone(),
        gpu_model: r.gpu_model.clone(),
        gpus: r.gpus,
        state: state_words(&r.state),
        state_class: r.state.clone(),
        submitted_by: r.submitted_by.clone(),
        submitted_at: local(state, r.submitted_at),
        min_runtime: if r.min_runtime_s == 0 {
            i18n::t("run-min-runtime-free")
        } else {
            i18n::format::duration(r.min_runtime_s)
        },
        protected: r.min_runtime_s > 0,
        protected_gpu_hours: domain::format_protected_gpu_hours(
            (i64::from(r.gpus) * r.min_runtime_s * 1000 + 3599) / 3600,
            false,
        ),
        command: r.command.clone(),
        waiting: waiting_words(state, r),
    }
}

#[derive(askama::Template)]
#[template(path = "runs/list.html")]
struct ListPage {
    layout: Layout,
    rows: Vec<RowView>,
    error: Option<String>,
    scopes: Vec<Opt>,
    states: Vec<Opt>,
    projects: Vec<Opt>,
    clusters: Vec<Opt>,
    time_zone: String,
    can_submit: bool,
    /// How many runs the page shows of how many in all, in words; `None` when none match.
    shown: Option<String>,
    /// The link to the next, older page, when older runs match.
    older: Option<String>,
    /// The link to the newest runs, on an older page.
    newest: Option<String>,
}

/// `/runs` with `filter`'s choices (scope, state, project, cluster, limit) and, when given, the
/// cursor `before`.
fn list_link(filter: &Filter, before: Option<i64>) -> String {
    let limit = filter.limit.map(|l| l.to_string());
    let before = before.map(|b| b.to_string());
    let pairs: Vec<(&str, &str)> = [
        ("scope", filter.scope.as_deref()),
        ("state", filter.state.as_deref()),
        ("project", filter.project.as_deref()),
        ("cluster", filter.cluster.as_deref()),
        ("limit", limit.as_deref()),
        ("before", before.as_deref()),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    match serde_urlencoded::to_string(&pairs) {
        Ok(q) if !q.is_empty() => format!("/runs?{q}"),
        _ => "/runs".to_string(),
    }
}

/// The page's count notice: "showing the latest 200 of 3,412 runs", "showing runs 201 to 400
/// of 3,412", "showing all 12 runs"; numbers in the page's language.
fn shown_words(page: &runs::Page, older_page: bool) -> Option<String> {
    let shown = page.rows.len() as i64;
    if page.total == 0 {
        return None;
    }
    Some(if shown == 0 {
        i18n::t1("runs-shown-none-older", "total", page.total)
    } else if older_page {
        i18n::ta(
            "runs-shown-older",
            &[
                ("from", &(page.newer + 1)),
                ("to", &(page.newer + shown)),
                ("total", &page.total),
            ],
        )
    } else if page.next_before.is_some() || shown < page.total {
        i18n::t2("runs-shown-latest", "shown", shown, "total", page.total)
    } else {
        i18n::t1("runs-shown-all", "total", page.total)
    })
}

async fn list(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    Query(mut filter): Query<Filter>,
) -> Result<Response, AppError> {
    // An empty select means "any".
    for f in [
        &mut filter.scope,
        &mut filter.state,
        &mut filter.project,
        &mut filter.cluster,
        &mut filter.before,
    ] {
        if f.as_deref().is_some_and(|s| s.trim().is_empty()) {
            *f = None;
        }
    }
    let tree = state.tree_for(&me).await?;
    let (page, error, status) =
        match runs::list_page(&state.pool, &me, &tree.parents, &filter).await {
            Ok(page) => (Some(page), None, StatusCode::OK),
            Err(e) if shown_on_form(&e) => (None, Some(e.public_message()), e.status()),
            Err(e) => return Err(e),
        };
    let older_page = filter.before.is_some();
    let shown = page.as_ref().and_then(|p| shown_words(p, older_page));
    let older = page
        .as_ref()
        .and_then(|p| p.next_before)
        .map(|b| list_link(&filter, Some(b)));
    // Back to the newest with the same choices: from an older page or a refused cursor.
    let newest = older_page.then(|| list_link(&filter, None));
    let rows = page.map(|p| p.rows).unwrap_or_default();
    let projects: Vec<String> = tree
        .nodes
        .iter()
        .filter(|n| n.is_project && me.may_view(n.id, &tree.parents))
        .map(|n| n.name.clone())
        .collect();
    let inv = inventory::clusters(&state.pool).await?;
    let scope = filter.scope.as_deref().unwrap_or("all");
    let scopes = [
        ("all", "runs-scope-all"),
        ("mine", "runs-scope-mine"),
        ("projects", "runs-scope-projects"),
    ]
    .into_iter()
    .map(|(v, key)| Opt {
        value: v.into(),
        label: i18n::t(key),
        selected: v == scope,
    })
    .collect();
    let any = i18n::t("runs-any");
    let mut states = options(
        std::iter::once("active".to_string()).chain(runs::STATES.iter().map(|s| s.to_string())),
        filter.state.as_deref().unwrap_or(""),
        Some(&any),
    );
    for o in states.iter_mut().filter(|o| !o.value.is_empty()) {
        o.label = if o.value == "active" {
            i18n::t("runs-state-active")
        } else {
            state_words(&o.value)
        };
    }
    render_status(
        status,
        &ListPage {
            layout: Layout::for_user(&session, &me, "/runs").await?,
            rows: rows.iter().map(|r| row_view(&state, r)).collect(),
            error,
            scopes,
            states,
            projects: options(
                projects,
                filter.project.as_deref().unwrap_or(""),
                Some(&any),
            ),
            clusters: options(
                inv.iter().map(|c| c.name.clone()),
                filter.cluster.as_deref().unwrap_or(""),
                Some(&any),
            ),
            time_zone: state.site.time_zone_name.clone(),
            can_submit: can_submit(&me),
            shown,
            older,
            newest,
        },
    )
}

/// One timeline entry, formatted.
struct EventView {
    at: String,
    kind: String,
    message: String,
    for_run: Option<i64>,
    attempt: i32,
    /// A preemption or loss, highlighted.
    preemption: bool,
}

/// One placement, formatted.
struct PlacementView {
    attempt: i32,
    node: String,
    gpus: String,
    /// "Slurm job 42" on a Slurm cluster, else empty.
    job: String,
    process: String,
    exit_code: String,
    /// "37%, 0%, ?" while the attempt runs and its agent reports utilization.
    utilization: String,
}

#[derive(askama::Template)]
#[template(path = "runs/detail.html")]
struct DetailPage {
    layout: Layout,
    run: RowView,
    priority: i32,
    resumable: bool,
    time_limit: String,
    started_at: Option<String>,
    ended_at: Option<String>,
    attempt: i32,
    /// The exit status in words ([`runs::describe_exit`]).
    exit_code: Option<String>,
    decision_reason: Option<String>,
    /// The approval or denial, as the timeline records it.
    decision: Option<String>,
    workdir: Option<String>,
    env: Vec<String>,
    /// What its time cost, in words ([`charges_words`]).
    charges: String,
    events: Vec<EventView>,
    placements: Vec<PlacementView>,
    /// Attempts stopped by a real preemption (GPUs given to another run).
    preemptions: usize,
    /// Attempts stopped because their node was lost (an agent stopped, restarted or fell
    /// silent): not preemptions, shown apart.
    losses: usize,
    can_cancel: bool,
    can_decide: bool,
    error: Option<String>,
    /// The typed decision reason, kept after an error in the form it was typed in.
    reason: TypedReason,
    time_zone: String,
}

/// A decision reason typed into the approve or the deny form, kept after an error so that it
/// comes back in the same form (never in the other one, where a second click would send an
/// approval note as a denial).
#[derive(Default)]
struct TypedReason {
    approve: bool,
    text: String,
}

impl TypedReason {
    fn new(approve: bool, text: String) -> Self {
        Self { approve, text }
    }

    /// What the approve form shows.
    fn for_approve(&self) -> &str {
        if self.approve { &self.text } else { "" }
    }

    /// What the deny form shows.
    fn for_deny(&self) -> &str {
        if self.approve { "" } else { &self.text }
    }
}

async fn detail_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    id: i64,
    error: Option<AppError>,
    reason: TypedReason,
) -> Result<Response, AppError> {
    let tree = state.tree_for(me).await?;
    let d = runs::detail(&state.pool, me, &tree.parents, id).await?;
    let events: Vec<EventView> = d
        .events
        .iter()
        .map(|e| EventView {
            at: local(state, e.at),
            preemption: matches!(e.kind.as_str(), "preempted" | "lost"),
            kind: event_kind_words(&e.kind),
            message: e.words(),
            for_run: e.for_run,
            attempt: e.attempt,
        })
        .collect();
    let decision = d
        .events
        .iter()
        .rev()
        .find(|e| matches!(e.kind.as_str(), "approved" | "denied"))
        .map(runs::Event::words);
    let status = error.as_ref().map_or(StatusCode::OK, AppError::status);
    render_status(
        status,
        &DetailPage {
            layout: Layout::for_user(session, me, "/runs").await?,
            run: row_view(state, &d.run),
            priority: d.run.priority,
            resumable: d.run.resumable,
            time_limit: i18n::format::duration(d.run.time_limit_s),
            started_at: d.run.started_at.map(|t| local(state, t)),
            ended_at: d.run.ended_at.map(|t| local(state, t)),
            attempt: d.run.attempt,
            exit_code: d.run.exit_code.map(runs::describe_exit),
            decision_reason: d.run.decision_reason.clone().filter(|r| !r.is_empty()),
            decision,
            workdir: d.workdir.clone(),
            env: d.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            charges: charges_words(
                &d.charges,
                &state.site.currency,
                d.run.ended_at.is_some(),
                d.run.started_at.is_some(),
            ),
            preemptions: stopped_attempts(&d.events, "preempted"),
            losses: stopped_attempts(&d.events, "lost"),
            events,
            placements: d
                .placements
                .iter()
                .map(|p| PlacementView {
                    attempt: p.attempt,
                    node: p.node.clone(),
                    gpus: p
                        .gpus
                        .iter()
                        .map(i32::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    job: p.slurm_job.map_or(String::new(), |j| {
                        i18n::t1("run-slurm-job", "job", j.to_string())
                    }),
                    process: if p.note.is_empty() {
                        i18n::t(&format!("proc-{}", p.process))
                    } else {
                        i18n::t(&format!("proc-{}", p.note.replace('_', "-")))
                    },
                    exit_code: p.exit_code.map_or(String::new(), |c| c.to_string()),
                    utilization: p.utilization.as_ref().map_or(String::new(), |u| {
                        u.iter()
                            .map(|v| v.map_or("?".to_string(), |v| format!("{v}%")))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }),
                })
                .collect(),
            can_cancel: d.can_cancel,
            can_decide: d.can_decide,
            error: error.map(|e| e.public_message()),
            reason,
            time_zone: state.site.time_zone_name.clone(),
        },
    )
}

/// A run's charges in words, in the page's language: the money and GPU-hours paid from the
/// budget, then those prepaid by a contract and those free, each only when there are some;
/// for a run that ended without ever starting (denied, cancelled while waiting), that it
/// never ran; for one that ended with nothing charged, none (not "none yet").
fn charges_words(c: &runs::Charges, currency: &str, ended: bool, started: bool) -> String {
    let mut parts = Vec::new();
    if c.charged_gpu_seconds > 0 || c.charged_minor > 0 {
        parts.push(i18n::t2(
            "run-charges-paid",
            "money",
            crate::domain::Money(c.charged_minor).display(currency),
            "hours",
            i18n::format::gpu_hours(c.charged_gpu_seconds),
        ));
    }
    for (key, secs) in [
        ("run-charges-prepaid", c.prepaid_gpu_seconds),
        ("run-charges-free", c.free_gpu_seconds),
    ] {
        if secs > 0 {
            parts.push(i18n::t1(key, "hours", i18n::format::gpu_hours(secs)));
        }
    }
    if parts.is_empty() && ended && !started {
        i18n::t("run-charges-never-ran")
    } else if parts.is_empty() && ended {
        i18n::t("run-charges-ended-none")
    } else if parts.is_empty() {
        i18n::t("run-charges-none")
    } else {
        parts.join("; ")
    }
}

/// How many attempts have a timeline entry of `kind` (`preempted` or `lost`): a run that is
/// not resumable has two `lost` entries for one loss (the stop and the end).
fn stopped_attempts(events: &[runs::Event], kind: &str) -> usize {
    events
        .iter()
        .filter(|e| e.kind == kind)
        .map(|e| e.attempt)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

async fn detail(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    detail_page(&state, &session, &me, id, None, TypedReason::default()).await
}

/// The hidden fields of the cancel, approve and deny forms.
#[derive(serde::Deserialize, Default)]
struct ActionForm {
    /// Why (approve and deny).
    #[serde(default)]
    reason: String,
    /// `approvals` when sent from the inbox; the run page otherwise.
    #[serde(default)]
    from: String,
}

async fn cancel(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
) -> Result<Response, AppError> {
    let tree = state.tree_for(&me).await?;
    match runs::cancel(&state.pool, &state.site, &me, &tree.parents, id).await {
        Ok(()) => {
            let now: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
                .bind(id)
                .fetch_one(&state.pool)
                .await?;
            let notice = if now == "cancelled" {
                i18n::t1("run-cancelled", "id", id.to_string())
            } else {
                i18n::t1("run-cancel-requested", "id", id.to_string())
            };
            flash(&session, notice).await?;
            Ok(Redirect::to(&format!("/runs/{id}")).into_response())
        }
        Err(e @ (AppError::Invalid { .. } | AppError::Refused { .. })) => {
            detail_page(&state, &session, &me, id, Some(e), TypedReason::default()).await
        }
        Err(e) => Err(e),
    }
}

async fn decide(
    state: AppState,
    session: Session,
    me: Account,
    id: i64,
    approve: bool,
    form: ActionForm,
) -> Result<Response, AppError> {
    let tree = state.tree_for(&me).await?;
    let from_inbox = form.from == "approvals";
    match runs::decide(
        &state.pool,
        &state.site,
        &me,
        &tree.parents,
        id,
        approve,
        &form.reason,
    )
    .await
    {
        Ok(()) => {
            let key = if approve {
                "approvals-approved"
            } else {
                "approvals-denied"
            };
            flash(&session, i18n::t1(key, "id", id.to_string())).await?;
            let back = if from_inbox {
                "/approvals".to_string()
            } else {
                format!("/runs/{id}")
            };
            Ok(Redirect::to(&back).into_response())
        }
        Err(e @ (AppError::Invalid { .. } | AppError::Refused { .. })) => {
            if from_inbox {
                let typed = TypedReason::new(approve, form.reason);
                approvals_page(&state, &session, &me, Some((id, e, typed))).await
            } else {
                let typed = TypedReason::new(approve, form.reason);
                detail_page(&state, &session, &me, id, Some(e), typed).await
            }
        }
        Err(e) => Err(e),
    }
}

async fn approve(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(form): Form<ActionForm>,
) -> Result<Response, AppError> {
    decide(state, session, me, id, true, form).await
}

async fn deny(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
    PagePath(id): PagePath<i64>,
    Form(form): Form<ActionForm>,
) -> Result<Response, AppError> {
    decide(state, session, me, id, false, form).await
}

/// A run in the inbox, with the error of a decision that failed on it.
struct InboxRow {
    run: RowView,
    error: Option<String>,
    reason: TypedReason,
}

#[derive(askama::Template)]
#[template(path = "runs/approvals.html")]
struct ApprovalsPage {
    layout: Layout,
    rows: Vec<InboxRow>,
    /// A failed decision on a run that is no longer in the inbox.
    error: Option<String>,
    is_lead: bool,
}

impl ApprovalsPage {
    /// What a waiting run asks for, after its link: `: 2 × H100 on east for p1`.
    fn what(&self, row: &InboxRow) -> String {
        let r = &row.run;
        i18n::ta(
            "approvals-run-what",
            &[
                ("gpus", &r.gpus.to_string()),
                ("model", &r.gpu_model),
                ("cluster", &r.cluster),
                ("project", &r.project),
            ],
        )
    }
}

/// Whether `me` leads something (and so may have an approvals inbox): leads and admins.
pub fn is_lead(me: &Account) -> bool {
    me.is_admin() || me.lead_nodes().next().is_some()
}

async fn approvals_page(
    state: &AppState,
    session: &Session,
    me: &Account,
    failed: Option<(i64, AppError, TypedReason)>,
) -> Result<Response, AppError> {
    let tree = state.tree_for(me).await?;
    let rows = runs::approvals(&state.pool, me, &tree.parents).await?;
    let status = failed
        .as_ref()
        .map_or(StatusCode::OK, |(_, e, _)| e.status());
    let mut failed = failed;
    let rows = rows
        .iter()
        .map(|r| {
            let (error, reason) = match &mut failed {
                Some((id, e, reason)) if *id == r.id => {
                    (Some(e.public_message()), std::mem::take(reason))
                }
                _ => (None, TypedReason::default()),
            };
            InboxRow {
                run: row_view(state, r),
                error,
                reason,
            }
        })
        .collect::<Vec<_>>();
    // A failure on a run no longer in the inbox still shows (at the top).
    let error = failed
        .filter(|(id, _, _)| !rows.iter().any(|r: &InboxRow| r.run.id == *id))
        .map(|(id, e, _)| {
            // A problem that names the run already is not prefixed with it again ("run 7: run
            // 7 is not waiting for approval", found by a new-user check).
            let problem = e.public_message();
            if problem.contains(&id.to_string()) {
                problem
            } else {
                i18n::t2(
                    "approvals-error-on-run",
                    "id",
                    id.to_string(),
                    "problem",
                    problem,
                )
            }
        });
    render_status(
        status,
        &ApprovalsPage {
            layout: Layout::for_user(session, me, "/approvals").await?,
            rows,
            error,
            is_lead: is_lead(me),
        },
    )
}

async fn approvals(
    State(state): State<AppState>,
    session: Session,
    CurrentUser(me): CurrentUser,
) -> Result<Response, AppError> {
    approvals_page(&state, &session, &me, None).await
}

/// One home-page notice: run id, when (local time), message.
pub type Notice = (i64, String, String);

/// What the home page shows about runs.
pub struct HomeRuns {
    /// Recent preemptions of the user's runs, then runs whose node was lost: (run id, when,
    /// message) each.
    pub notices: (Vec<Notice>, Vec<Notice>),
    /// The user's active runs.
    pub active: Vec<(i64, String, String, String)>,
    /// Runs waiting for the user's approval (`None` when the user leads nothing).
    pub waiting_approval: Option<usize>,
    /// Whether to show the researcher's sections.
    pub researcher: bool,
}

impl HomeRuns {
    /// "3 runs waiting for your approval" for leads; `None` for others.
    pub fn approvals_label(&self) -> Option<String> {
        self.waiting_approval.map(|n| {
            i18n::t2(
                "home-approvals",
                "count",
                n,
                "shown",
                i18n::format::count(n as i64),
            )
        })
    }
}

/// The run sections of the home page: preemption notices and active runs for researchers
/// (runs, project, state and why it waits as plain text), the approvals count for leads.
///
/// # Errors
/// Database errors.
pub async fn home_runs(state: &AppState, me: &Account) -> Result<HomeRuns, AppError> {
    let tree = state.tree_for(me).await?;
    let researcher = me.has(Role::Researcher) || !me.projects.is_empty();
    let (notices, active) = if researcher {
        let (losses, preemptions): (Vec<_>, Vec<_>) = runs::preemption_notices(&state.pool, me)
            .await?
            .into_iter()
            .partition(|n| n.3);
        let words = |v: Vec<(i64, time::OffsetDateTime, String, bool)>| -> Vec<_> {
            v.into_iter()
                .map(|(id, at, message, _)| (id, local(state, at), message))
                .collect()
        };
        let notices = (words(preemptions), words(losses));
        let filter = Filter {
            scope: Some("mine".into()),
            state: Some("active".into()),
            limit: Some(50),
            ..Filter::default()
        };
        let active = runs::list(&state.pool, me, &tree.parents, &filter)
            .await?
            .0
            .iter()
            .map(|r| {
                let what = i18n::ta(
                    "run-what",
                    &[
                        ("gpus", &r.gpus.to_string()),
                        ("model", &r.gpu_model),
                        ("cluster", &r.cluster),
                        ("project", &r.project),
                    ],
                );
                let state_words = match waiting_words(state, r) {
                    Some(w) => format!("{}: {w}", state_words(&r.state)),
                    None => state_words(&r.state),
                };
                (r.id, what, state_words, r.command.clone())
            })
            .collect();
        (notices, active)
    } else {
        ((Vec::new(), Vec::new()), Vec::new())
    };
    let waiting_approval = if is_lead(me) {
        Some(runs::approvals(&state.pool, me, &tree.parents).await?.len())
    } else {
        None
    };
    Ok(HomeRuns {
        notices,
        active,
        waiting_approval,
        researcher,
    })
}

/// Run and approval routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/runs", get(list))
        .route("/runs/new", get(new_run).post(post_run))
        .route("/runs/{id}", get(detail))
        .route("/runs/{id}/cancel", post(cancel))
        .route("/runs/{id}/approve", post(approve))
        .route("/runs/{id}/deny", post(deny))
        .route("/approvals", get(approvals))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing charged reads "none yet" only while the run may still be charged (found by a
    /// new-user check: an ended run said "none yet").
    #[test]
    fn charges_say_none_yet_only_before_the_end() {
        let none = runs::Charges::default();
        assert!(charges_words(&none, "EUR", false, false).starts_with("none yet"));
        assert!(charges_words(&none, "EUR", false, true).starts_with("none yet"));
        assert_eq!(
            charges_words(&none, "EUR", true, false),
            "none: it never ran"
        );
        assert_eq!(charges_words(&none, "EUR", true, true), "none");
        let free = runs::Charges {
            free_gpu_seconds: 3600,
            ..none
        };
        assert!(!charges_words(&free, "EUR", true, true).starts_with("none"));
    }

    #[test]
    fn minutes_and_hours_parse_to_seconds() {
        assert_eq!(parse_minutes("90", "f", "x").unwrap(), 5400);
        assert_eq!(parse_minutes(" 1:30 ", "f", "x").unwrap(), 5400);
        assert_eq!(parse_minutes("0", "f", "x").unwrap(), 0);
        assert_eq!(parse_minutes("0:05", "f", "x").unwrap(), 300);
        for bad in [
            "", "1:60", "-5", "1.5", "a:b", "1:-1", "-0:30", "+5", "1:2:3",
        ] {
            assert!(parse_minutes(bad, "f", "x").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn environment_lines_parse_and_errors_name_the_line() {
        let env = parse_env("A=1\r\n\nB = x=y\n", "env").unwrap();
        assert_eq!(env.get("A").map(String::as_str), Some("1"));
        assert_eq!(env.get("B").map(String::as_str), Some(" x=y"));
        let err = parse_env("A=1\nnot a pair", "env").unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(parse_env("A=1\nA=2", "env").is_err());
    }
}
