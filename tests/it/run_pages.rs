//! The run pages through a logged-in browser-like client on the demo organisation: submit
//! with a cost preview, form errors that keep the input, the run page, cancel, the lead's
//! approvals inbox, and who may see what. The in-process app runs no scheduler loop and no
//! agent is registered, so submitted runs stay queued.

use axum::http::StatusCode;
use tranche::demo::DemoUser;

use crate::support::{Client, TestApp, demo_password};

/// A fresh demo organisation and a client signed in as its user with `role`.
async fn signed_in(role: &str) -> (TestApp, Vec<DemoUser>, Client) {
    let (app, users) = TestApp::with_demo().await;
    let client = login(&app, &users, role).await;
    (app, users, client)
}

pub(crate) async fn login(app: &TestApp, users: &[DemoUser], role: &str) -> Client {
    let (name, pw) = demo_password(users, role);
    let mut c = app.client();
    c.login(&name, &pw).await;
    c
}

/// A submission of the demo researcher's first project on the H100 cluster.
fn run_form<'a>(gpus: &'a str, min_runtime: &'a str, command: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("project", "fm-pretrain-7b"),
        ("cluster", "h100-east"),
        ("gpu_model", "H100"),
        ("gpus", gpus),
        ("min_runtime", min_runtime),
        ("time_limit", "8:00"),
        ("priority", "0"),
        ("resumable", "on"),
        ("command", command),
        ("workdir", "/home/r/train"),
        ("env", "SEED=7\nWANDB_MODE=offline"),
    ]
}

fn with_action<'a>(
    mut fields: Vec<(&'a str, &'a str)>,
    action: &'a str,
) -> Vec<(&'a str, &'a str)> {
    fields.push(("action", action));
    fields
}

async fn run_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM runs")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Submits through the form; returns the new run's id from the redirect.
pub(crate) async fn submit(c: &mut Client, gpus: &str, min_runtime: &str, command: &str) -> i64 {
    let (status, body, location) = c
        .post(
            "/runs/new",
            &with_action(run_form(gpus, min_runtime, command), "submit"),
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    location
        .as_deref()
        .and_then(|l| l.strip_prefix("/runs/"))
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("redirect to the run page, got {location:?}"))
}

#[tokio::test]
async fn anonymous_visitors_go_to_the_login_page() {
    let (app, _) = TestApp::with_demo().await;
    let mut c = app.client();
    for path in ["/runs", "/runs/new", "/runs/1", "/approvals"] {
        let (status, _, location) = c.get(path).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{path}");
        assert!(
            location.as_deref().unwrap_or("").starts_with("/login"),
            "{path}: {location:?}"
        );
    }
}

#[tokio::test]
async fn researcher_previews_then_submits_and_lands_on_the_run_page() {
    let (app, _, mut c) = signed_in("researcher").await;
    let (status, body, _) = c.get("/runs/new").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("fm-pretrain-7b") && body.contains("h100-east"));
    assert!(body.contains(r#"value="preview""#), "a preview button");
    // The nav offers the run pages; a researcher has no approvals inbox.
    assert!(body.contains(r#"href="/runs""#) && body.contains(r#"href="/runs/new""#));
    assert!(!body.contains(r#"href="/approvals""#));

    // 2 H100 x 1 h protected at weight 1 x 2.50 = 5.00 USD.
    let (status, body, _) = c
        .post(
            "/runs/new",
            &with_action(run_form("2", "60", "python train.py"), "preview"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("Cost preview"), "{body}");
    assert!(body.contains("2.0 protected GPU-hours, 5.00 USD"), "{body}");
    assert!(!body.contains("needs approval"));
    // The form keeps what was typed, and nothing is submitted yet.
    assert!(body.contains("python train.py") && body.contains("WANDB_MODE=offline"));
    assert_eq!(run_count(&app).await, 0);

    // Minimum runtime 0: free and preemptible.
    let (status, body, _) = c
        .post(
            "/runs/new",
            &with_action(run_form("2", "0", "python train.py"), "preview"),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("free, preemptible"), "{body}");

    let id = submit(&mut c, "2", "1:00", "python train.py").await;
    let (status, body, _) = c.get(&format!("/runs/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains(&format!("Run {id} submitted")),
        "flash: {body}"
    );
    assert!(body.contains("queued"), "{body}");
    assert!(body.contains("Why it waits"), "{body}");
    assert!(
        body.contains("submitted by demo-researcher"),
        "timeline: {body}"
    );
    assert!(body.contains("SEED=7") && body.contains("/home/r/train"));
    assert!(body.contains(&format!("action=\"/runs/{id}/cancel\"")));
    let stored: (i32, i64, i64, bool, serde_json::Value) = sqlx::query_as(
        "SELECT gpus, min_runtime_s, time_limit_s, resumable, env FROM runs WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        stored,
        (
            2,
            3600,
            8 * 3600,
            true,
            serde_json::json!({"SEED": "7", "WANDB_MODE": "offline"})
        )
    );

    // The list shows it with its wait, and filters.
    let (status, body, _) = c.get("/runs?scope=mine&state=active").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(&format!("href=\"/runs/{id}\"")), "{body}");
    assert!(body.contains("no estimated start yet") || body.contains("estimated start"));
    let (_, body, _) = c.get("/runs?state=succeeded").await;
    assert!(!body.contains(&format!("href=\"/runs/{id}\"")));
    let (status, body, _) = c.get("/runs?state=sleeping").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("unknown state"), "{body}");

    // Home: the active run is listed.
    let (_, body, _) = c.get("/").await;
    assert!(body.contains("Your active runs"));
    assert!(body.contains(&format!("href=\"/runs/{id}\"")), "{body}");
}

#[tokio::test]
async fn a_bad_field_rerenders_with_its_message_and_the_typed_input() {
    let (app, _, mut c) = signed_in("researcher").await;
    let command = "torchrun --nproc 8 train.py --lr 3e-4";
    let cases = [
        (run_form("two", "60", command), "whole number"),
        (run_form("2", "1:75", command), "hours and minutes"),
        (run_form("2", "9:00", command), "site maximum"),
        (run_form("2000000", "60", command), "from 1 to 100,000"),
        (run_form("4000", "60", command), "could never start"),
    ];
    for (fields, message) in cases {
        for action in ["preview", "submit"] {
            let (status, body, _) = c
                .post("/runs/new", &with_action(fields.clone(), action))
                .await;
            assert!(
                status == StatusCode::UNPROCESSABLE_ENTITY || status == StatusCode::CONFLICT,
                "{message}: {status}"
            );
            assert!(body.contains(message), "{message}: {body}");
            assert!(body.contains(command), "the command is kept: {body}");
            assert!(body.contains(r#"aria-invalid="true""#), "{body}");
            assert!(body.contains("WANDB_MODE=offline"));
        }
    }
    // A malformed environment line names the line.
    let mut fields = with_action(run_form("1", "0", command), "submit");
    fields.retain(|(k, _)| *k != "env");
    fields.push(("env", "A=1\njust words"));
    let (status, body, _) = c.post("/runs/new", &fields).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("line 2"), "{body}");
    // An empty command.
    let (status, body, _) = c
        .post(
            "/runs/new",
            &with_action(run_form("1", "0", "  "), "submit"),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("the command must be"), "{body}");
    assert_eq!(run_count(&app).await, 0);
}

#[tokio::test]
async fn submitting_to_a_project_of_others_is_forbidden_and_inserts_nothing() {
    let (app, _, mut c) = signed_in("researcher").await;
    let mut fields = with_action(run_form("1", "30", "echo hi"), "submit");
    // A project the researcher may not see answers as a missing one, the input kept.
    fields[0] = ("project", "ar-weather");
    let (status, hidden, _) = c.post("/runs/new", &fields).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{hidden}");
    assert!(hidden.contains("there is no project named"), "{hidden}");
    assert!(hidden.contains("echo hi"));
    fields[0] = ("project", "no-such-project");
    let (status, missing, _) = c.post("/runs/new", &fields).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(missing.contains("there is no project named"), "{missing}");
    assert_eq!(run_count(&app).await, 0);
}

#[tokio::test]
async fn a_large_run_waits_for_the_lead_who_denies_it_with_a_reason() {
    let (app, users, mut researcher) = signed_in("researcher").await;
    // 16 GPUs x 5 h = 80 protected GPU-hours, above the self-service limit of 64.
    let (status, body, _) = researcher
        .post(
            "/runs/new",
            &with_action(run_form("16", "5:00", "python big.py"), "preview"),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("needs approval"), "{body}");
    assert!(body.contains("a lead must approve it"), "{body}");
    let id = submit(&mut researcher, "16", "300", "python big.py").await;
    let (_, body, _) = researcher.get(&format!("/runs/{id}")).await;
    assert!(body.contains("waiting approval"), "{body}");
    assert!(body.contains("waits for a lead"), "{body}");
    // The researcher may not decide it.
    assert!(!body.contains(&format!("/runs/{id}/deny")));
    let (status, _, _) = researcher
        .post(&format!("/runs/{id}/approve"), &[("reason", "")])
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let mut lead = login(&app, &users, "lead").await;
    let (_, body, _) = lead.get("/").await;
    assert!(body.contains("1 run waiting for your approval"), "{body}");
    let (status, body, _) = lead.get("/approvals").await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(&format!("Run {id}")), "{body}");
    assert!(body.contains("fm-pretrain-7b") && body.contains("demo-researcher"));
    assert!(
        body.contains("80.0 GPU-hours") && body.contains("5 h"),
        "{body}"
    );
    assert!(body.contains("python big.py"));

    // An approval note that is too long comes back in the approve form, not the deny form,
    // where a second click would send it as a denial.
    let note = "ship it ".repeat(300);
    let (status, body, _) = lead
        .post(
            &format!("/runs/{id}/approve"),
            &[("reason", note.as_str()), ("from", "approvals")],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let approve_form = body
        .split(&format!(r#"action="/runs/{id}/approve""#))
        .nth(1)
        .and_then(|rest| rest.split("</form>").next())
        .expect("the approve form");
    let deny_form = body
        .split(&format!(r#"action="/runs/{id}/deny""#))
        .nth(1)
        .and_then(|rest| rest.split("</form>").next())
        .expect("the deny form");
    assert!(approve_form.contains(note.trim_end()), "{approve_form}");
    assert!(!deny_form.contains("ship it"), "{deny_form}");

    // Denied without a reason: the inbox shows why, and the run still waits.
    let deny = format!("/runs/{id}/deny");
    let (status, body, _) = lead
        .post(&deny, &[("reason", "  "), ("from", "approvals")])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("say why the run is denied"), "{body}");
    assert!(body.contains(&format!("Run {id}")));
    let (status, _, location) = lead
        .post(
            &deny,
            &[("reason", "too big for this week"), ("from", "approvals")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location.as_deref(), Some("/approvals"));
    let (_, body, _) = lead.get("/approvals").await;
    assert!(body.contains(&format!("Run {id} denied.")), "{body}");
    assert!(body.contains("No runs wait for your approval"), "{body}");

    let (status, body, _) = researcher.get(&format!("/runs/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("denied"), "{body}");
    assert!(body.contains("too big for this week"), "{body}");
    assert!(!body.contains(&format!("/runs/{id}/cancel")));
    // Deciding twice is refused with the state.
    let (status, body, _) = lead
        .post(&format!("/runs/{id}/approve"), &[("reason", "")])
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body.contains("not waiting for approval"), "{body}");
    // From the inbox, where the run is no longer listed: the problem names the run once (it
    // read "run 7: run 7 is not waiting for approval").
    let (status, body, _) = lead
        .post(
            &format!("/runs/{id}/approve"),
            &[("reason", ""), ("from", "/approvals")],
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        body.contains(&format!("run {id} is not waiting for approval")),
        "{body}"
    );
    assert!(!body.contains(&format!("run {id}: run {id}")), "{body}");
}

#[tokio::test]
async fn the_lead_approves_from_the_run_page() {
    let (app, users, mut researcher) = signed_in("researcher").await;
    let id = submit(&mut researcher, "16", "300", "python big.py").await;
    let mut lead = login(&app, &users, "lead").await;
    let (_, body, _) = lead.get(&format!("/runs/{id}")).await;
    assert!(
        body.contains(&format!("action=\"/runs/{id}/approve\"")),
        "{body}"
    );
    let (status, _, location) = lead
        .post(&format!("/runs/{id}/approve"), &[("reason", "deadline")])
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location, Some(format!("/runs/{id}")));
    let (_, body, _) = researcher.get(&format!("/runs/{id}")).await;
    assert!(body.contains("queued"), "{body}");
    assert!(body.contains("approved by demo-lead: deadline"), "{body}");
}

#[tokio::test]
async fn another_researcher_cannot_see_or_cancel_the_run() {
    let (app, _, mut owner) = signed_in("researcher").await;
    let id = submit(&mut owner, "1", "30", "echo secret").await;
    let (uid, pw) = tranche::db::users::create(&app.pool, None, "other", "researcher", None)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO project_members (project_id, user_id) SELECT id, $1 FROM tree_nodes WHERE name = 'ar-weather'",
    )
    .bind(uid)
    .execute(&app.pool)
    .await
    .unwrap();
    let mut other = app.client();
    other.login("other", &pw).await;
    let (status, body, _) = other.get(&format!("/runs/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!body.contains("echo secret"));
    let (status, _, _) = other.post(&format!("/runs/{id}/cancel"), &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, body, _) = other.get("/runs").await;
    assert!(!body.contains(&format!("href=\"/runs/{id}\"")), "{body}");
    // A path that is not a number is a 404 page too.
    let (status, _, _) = other.get("/runs/abc").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let state: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(state, "queued");
}

#[tokio::test]
async fn the_submitter_cancels_from_the_run_page() {
    let (app, _, mut c) = signed_in("researcher").await;
    let id = submit(&mut c, "1", "0", "sleep 1000").await;
    let cancel = format!("/runs/{id}/cancel");
    let (status, _, location) = c.post(&cancel, &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location, Some(format!("/runs/{id}")));
    let (_, body, _) = c.get(&format!("/runs/{id}")).await;
    assert!(body.contains(&format!("Run {id} cancelled.")), "{body}");
    assert!(body.contains("cancelled by demo-researcher"), "{body}");
    assert!(!body.contains(&format!("action=\"{cancel}\"")));
    // Cancelling again: the page says it already ended.
    let (status, body, _) = c.post(&cancel, &[]).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body.contains("already ended"), "{body}");
    let state: String = sqlx::query_scalar("SELECT state FROM runs WHERE id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(state, "cancelled");
}

#[tokio::test]
async fn a_preemption_shows_on_the_home_page_and_the_timeline() {
    let (app, _, mut c) = signed_in("researcher").await;
    let victim = submit(&mut c, "1", "0", "python sweep.py").await;
    let other = submit(&mut c, "1", "30", "python main.py").await;
    let mut conn = app.pool.acquire().await.unwrap();
    tranche::runs::event(
        &mut conn,
        victim,
        "preempted",
        &tranche::i18n::said::Said::new("preempt-unallocated"),
        Some(other),
    )
    .await
    .unwrap();
    let fragile = submit(&mut c, "1", "30", "python eval.py").await;
    tranche::runs::event(
        &mut conn,
        fragile,
        "lost",
        &tranche::i18n::said::Said::new("event-node-silent")
            .arg("node", "n1")
            .arg("seconds", "30"),
        None,
    )
    .await
    .unwrap();
    // The run's end after the loss writes a second event of the kind: one notice stands.
    tranche::runs::event(
        &mut conn,
        fragile,
        "lost",
        &tranche::i18n::said::Said::new("event-lost"),
        None,
    )
    .await
    .unwrap();
    drop(conn);
    let (_, body, _) = c.get("/").await;
    assert!(body.contains("Preemption notices"), "{body}");
    assert!(body.contains("its GPUs went to an allocated run"));
    // A node loss is not called a preemption: it has its own list.
    let (preemptions, losses) = body
        .split_once("Runs whose node was lost")
        .expect("a list of node losses");
    assert!(
        !preemptions.contains("its agent sent no heartbeat"),
        "{body}"
    );
    assert!(losses.contains("its agent sent no heartbeat"), "{body}");
    let section = losses.split("</section>").next().unwrap();
    assert_eq!(
        section
            .matches(&format!("href=\"/runs/{fragile}\""))
            .count(),
        1,
        "{body}"
    );
    assert!(!losses.contains("not resumable"), "{body}");
    assert!(body.contains(&format!("href=\"/runs/{victim}\"")));
    let (_, body, _) = c.get(&format!("/runs/{victim}")).await;
    assert!(body.contains(r#"class="preempted""#), "{body}");
    assert!(
        body.contains(&format!(
            "made room for <a href=\"/runs/{other}\">run {other}</a>"
        )),
        "{body}"
    );
}

/// The run form's one-time field, from its page.
fn one_time_key(body: &str) -> String {
    body.split(r#"name="once" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a one-time field")
        .to_string()
}

#[tokio::test]
async fn a_form_submitted_twice_makes_one_run() {
    let (app, _, mut c) = signed_in("researcher").await;
    // The form carries its one-time key, kept through a preview.
    let (_, body, _) = c.get("/runs/new").await;
    let once = one_time_key(&body);
    assert_eq!(once.len(), 32, "{once}");
    let mut fields = with_action(run_form("1", "30", "echo once"), "preview");
    fields.push(("once", &once));
    let (_, body, _) = c.post("/runs/new", &fields).await;
    assert!(body.contains(&format!(r#"name="once" value="{once}""#)));
    fields.retain(|(k, _)| *k != "action");
    fields.push(("action", "submit"));
    let (status, _, first) = c.post("/runs/new", &fields).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    // The back button and Submit again: the same run, and a word about it.
    let (status, _, again) = c.post("/runs/new", &fields).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(again, first);
    assert_eq!(run_count(&app).await, 1);
    let (_, body, _) = c.get(first.as_deref().unwrap()).await;
    assert!(body.contains("This form was already submitted"), "{body}");
    // Back, edit, Submit: the key was used for other values. The form comes back with what
    // was typed, a word about the first run and a new key; nothing is created yet.
    let first_id = first
        .as_deref()
        .unwrap()
        .trim_start_matches("/runs/")
        .to_string();
    let edited: Vec<(&str, &str)> = fields
        .iter()
        .map(|&(k, v)| (k, if k == "command" { "echo edited" } else { v }))
        .collect();
    let (status, body, _) = c.post("/runs/new", &edited).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body.contains(&format!(
            "already submitted as run {first_id} with other values"
        )),
        "{body}"
    );
    assert!(body.contains("echo edited"), "{body}");
    let fresh = one_time_key(&body);
    assert_eq!(fresh.len(), 32, "{fresh}");
    assert_ne!(fresh, once);
    assert_eq!(run_count(&app).await, 1);
    // Sent again as shown, it is a new run.
    let resent: Vec<(&str, &str)> = edited
        .iter()
        .map(|&(k, v)| (k, if k == "once" { fresh.as_str() } else { v }))
        .collect();
    let (status, _, second) = c.post("/runs/new", &resent).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_ne!(second, first);
    assert_eq!(run_count(&app).await, 2);
}

/// The ids of the runs a list page shows, in its order.
fn listed_ids(body: &str) -> Vec<i64> {
    body.split("<tr><td><a href=\"/runs/")
        .skip(1)
        .map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().expect("a run id")
        })
        .collect()
}

/// The target of the page's link with `rel`, unescaped.
fn link(body: &str, rel: &str) -> Option<String> {
    let end = body.find(&format!("\" rel=\"{rel}\""))?;
    let start = body[..end].rfind("href=\"")? + "href=\"".len();
    Some(body[start..end].replace("&#38;", "&").replace("&amp;", "&"))
}

/// `n` with `sep` between thousands, written out by hand rather than by the formatter under
/// test (`n` below a million).
fn thousands(n: i64, sep: char) -> String {
    assert!(n < 1_000_000);
    if n < 1000 {
        n.to_string()
    } else {
        format!("{}{sep}{:03}", n / 1000, n % 1000)
    }
}

/// The runs list once stopped at 200 rows without a word. It now says how many it shows of
/// how many match, and its "older runs" link (a keyset cursor, `before` the last id shown)
/// keeps the filters and walks every matching run once, newest first, to the last page, which
/// links back to the newest. A cursor that is not a run id is a 4xx page, never a 5xx.
#[tokio::test]
async fn the_runs_list_counts_what_it_shows_and_pages_through_older_runs_by_a_cursor() {
    let (app, _, mut c) = signed_in("researcher").await;
    let first = submit(&mut c, "1", "0", "python page.py").await;
    // More than six pages of the researcher's past runs, written straight to the database.
    sqlx::query(
        "INSERT INTO runs (project_id, cluster_id, gpu_model_id, submitted_by, gpus, min_runtime_s, \
                time_limit_s, command, state, submitted_at, queued_at, ended_at) \
         SELECT project_id, cluster_id, gpu_model_id, submitted_by, gpus, min_runtime_s, time_limit_s, \
                command, 'succeeded', submitted_at - make_interval(mins => n), \
                submitted_at - make_interval(mins => n), submitted_at \
         FROM runs, generate_series(1, 1234) AS n WHERE id = $1",
    )
    .bind(first)
    .execute(&app.pool)
    .await
    .unwrap();
    // What the filter matches, counted and listed apart from the page's own query.
    let expected: Vec<i64> = sqlx::query_scalar(
        "SELECT r.id FROM runs r JOIN users u ON u.id = r.submitted_by JOIN tree_nodes t ON t.id = r.project_id \
         WHERE u.name = 'demo-researcher' AND t.name = 'fm-pretrain-7b' ORDER BY r.id DESC",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let total: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM runs r JOIN users u ON u.id = r.submitted_by JOIN tree_nodes t ON t.id = r.project_id \
         WHERE u.name = 'demo-researcher' AND t.name = 'fm-pretrain-7b'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(total > 1234, "{total}");
    let total_en = thousands(total, ',');

    let start = "/runs?scope=mine&project=fm-pretrain-7b";
    let (status, body, _) = c.get(start).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body.contains(&format!("Showing the latest 200 of {total_en} runs.")),
        "{body}"
    );
    assert!(
        link(&body, "first").is_none(),
        "the first page is the newest"
    );
    let mut seen = listed_ids(&body);
    assert_eq!(seen.len(), 200);
    let mut next = link(&body, "next").expect("an older runs link");
    assert!(body.contains(">Older runs</a>"));
    let mut pages = 1;
    loop {
        assert!(
            next.starts_with("/runs?scope=mine&project=fm-pretrain-7b&before="),
            "{next}"
        );
        assert_eq!(
            next.rsplit('=').next().and_then(|b| b.parse::<i64>().ok()),
            seen.last().copied(),
            "the cursor is the last id shown"
        );
        let (status, body, _) = c.get(&next).await;
        assert_eq!(status, StatusCode::OK, "{next}");
        pages += 1;
        let ids = listed_ids(&body);
        let from = seen.len() as i64 + 1;
        seen.extend(&ids);
        assert!(
            body.contains(&format!(
                "Showing runs {} to {} of {total_en}, newest first.",
                thousands(from, ','),
                thousands(seen.len() as i64, ',')
            )),
            "{body}"
        );
        assert_eq!(
            link(&body, "first").as_deref(),
            Some(start),
            "back to the newest with the same filters"
        );
        match link(&body, "next") {
            Some(n) => next = n,
            None => break,
        }
    }
    assert_eq!(pages as i64, (total + 199) / 200);
    // Every matching run once, none skipped, newest first.
    assert_eq!(seen, expected);

    // Past the oldest: nothing repeated, the count and the way back.
    let oldest = *expected.last().unwrap();
    let (status, body, _) = c.get(&format!("{start}&before={oldest}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(listed_ids(&body).is_empty());
    assert!(
        body.contains(&format!("No older runs; {total_en} runs match in all.")),
        "{body}"
    );
    assert!(link(&body, "next").is_none());
    assert_eq!(link(&body, "first").as_deref(), Some(start));

    // A cursor that is not a run id: a page that says so (422), or the input boundary's
    // refusal for bytes no field may carry; never a 5xx.
    for bad in [
        "abc",
        "-5",
        "0",
        "1.5",
        "%2B12",
        "12abc",
        "99999999999999999999",
        "9223372036854775808",
    ] {
        let (status, body, _) = c.get(&format!("/runs?before={bad}")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert!(
            body.contains("before is the id of a run, a whole number from 1"),
            "{bad}: {body}"
        );
        assert_eq!(link(&body, "first").as_deref(), Some("/runs"), "{bad}");
    }
    for odd in ["%00", "%FF", "%E2%80", "1%0A", "&before=1&before=2"] {
        let (status, body, _) = c.get(&format!("/runs?before={odd}")).await;
        assert!(status.is_client_error(), "{odd}: {status} {body}");
    }
    // The API reads the same cursor.
    let token = app.token_for("demo-researcher").await;
    let (status, page) = app
        .api(
            "GET",
            &format!(
                "/api/v1/runs?scope=mine&project=fm-pretrain-7b&limit=3&before={}",
                expected[1]
            ),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<i64> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, expected[2..5]);
    // With the next page's cursor: the last id shown while older runs remain, then none.
    let more = expected.len() > 5;
    assert_eq!(
        page["next_before"],
        if more {
            serde_json::json!(expected[4])
        } else {
            serde_json::json!(null)
        },
        "{page}"
    );
    // The oldest page: the two oldest runs, and no cursor.
    let n = expected.len();
    let (status, last) = app
        .api(
            "GET",
            &format!(
                "/api/v1/runs?scope=mine&project=fm-pretrain-7b&limit=3&before={}",
                expected[n - 3]
            ),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<i64> = last["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, expected[n - 2..]);
    assert_eq!(last["next_before"], serde_json::json!(null), "{last}");
    let (status, err) = app
        .api("GET", "/api/v1/runs?before=-1", Some(&token), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["error"]["field"], "before", "{err}");

    // In Basque: the numbers with Basque separators.
    let (status, _, _) = c.post("/account/language", &[("lang", "eu")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, body, _) = c.get(start).await;
    assert!(
        body.contains(&format!(
            "Azken 200 exekuzioak erakusten dira; guztira: {}.",
            thousands(total, '.')
        )),
        "{body}"
    );
    assert!(body.contains(">Exekuzio zaharragoak</a>"), "{body}");
    let (_, body, _) = c.get(&next_page(&body)).await;
    assert!(
        body.contains(&format!(
            "201–400 bitarteko exekuzioak erakusten dira, berrienetik hasita; guztira: {}.",
            thousands(total, '.')
        )),
        "{body}"
    );
}

fn next_page(body: &str) -> String {
    link(body, "next").expect("an older runs link")
}
