//! Budget alerts by e-mail, through a real SMTP exchange with a small recording server on
//! loopback (it speaks the protocol's happy path: EHLO, MAIL, RCPT, DATA, QUIT).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tranche::config::{Secret, Site, Smtp};

use crate::support::{TestApp, tomorrow_at};

/// Messages received: (recipients, data).
pub type Inbox = Arc<Mutex<Vec<(Vec<String>, String)>>>;

/// The sink's port, its inbox, and a signal raised on every message received.
pub async fn smtp_sink() -> (u16, Inbox, Arc<tokio::sync::Notify>) {
    let arrived = Arc::new(tokio::sync::Notify::new());
    let signal = arrived.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let inbox: Inbox = Arc::default();
    let store = inbox.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let store = store.clone();
            let signal = signal.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                write.write_all(b"220 sink ESMTP\r\n").await.unwrap();
                let mut rcpt = Vec::new();
                while let Ok(Some(line)) = lines.next_line().await {
                    let upper = line.to_ascii_uppercase();
                    if upper.starts_with("EHLO") || upper.starts_with("HELO") {
                        write.write_all(b"250-sink\r\n250 OK\r\n").await.unwrap();
                    } else if upper.starts_with("RCPT TO:") {
                        rcpt.push(line[8..].trim().trim_matches(['<', '>']).to_string());
                        write.write_all(b"250 OK\r\n").await.unwrap();
                    } else if upper.starts_with("DATA") {
                        write.write_all(b"354 go ahead\r\n").await.unwrap();
                        let mut data = String::new();
                        while let Ok(Some(l)) = lines.next_line().await {
                            if l == "." {
                                break;
                            }
                            data.push_str(&l);
                            data.push('\n');
                        }
                        store
                            .lock()
                            .unwrap()
                            .push((std::mem::take(&mut rcpt), data));
                        write.write_all(b"250 queued\r\n").await.unwrap();
                        signal.notify_one();
                    } else if upper.starts_with("QUIT") {
                        write.write_all(b"221 bye\r\n").await.unwrap();
                        return;
                    } else {
                        write.write_all(b"250 OK\r\n").await.unwrap();
                    }
                }
            });
        }
    });
    (port, inbox, arrived)
}

/// Project `p1` (50 % of a two-node H100 cluster `c`) and its lead `lead1` with the address
/// `lead1@example.org`, on a site that mails through [`smtp_sink`]: the set-up of the budget
/// alert tests.
pub struct AlertSite {
    pub app: TestApp,
    pub admin: tranche::auth::Account,
    pub project: i64,
    pub lead: i64,
    pub password: String,
    pub inbox: Inbox,
    pub arrived: Arc<tokio::sync::Notify>,
}

/// Builds an [`AlertSite`].
pub async fn alert_site() -> AlertSite {
    let (port, inbox, arrived) = smtp_sink().await;
    let site = Site {
        smtp: Some(Smtp {
            url: Secret::new(format!("smtp://127.0.0.1:{port}")),
            from: "Tranche <tranche@example.org>".into(),
        }),
        ..Site::for_tests()
    };
    let app = TestApp::with_site(site).await;
    tranche::db::users::first_run(&app.pool).await.unwrap();
    let admin = app.admin().await;
    tranche::db::inventory::create_gpu_model(&app.pool, &admin, "H100", "1", "1.00")
        .await
        .unwrap();
    let cluster = tranche::db::inventory::create_cluster(&app.pool, &admin, "c")
        .await
        .unwrap();
    for n in ["n1", "n2"] {
        tranche::db::inventory::add_node(&app.pool, &admin, cluster, n, "H100", "8")
            .await
            .unwrap();
    }
    let root = app.node_id("Organisation").await;
    let p = tranche::db::tree::create_node(
        &app.pool,
        &admin,
        root,
        "p1",
        tranche::db::tree::NodeKind::Project,
        tranche::domain::Share::parse_percent("50").unwrap(),
    )
    .await
    .unwrap();
    let (lead, password) = tranche::db::users::create(&app.pool, None, "lead1", "lead", Some("p1"))
        .await
        .unwrap();
    tranche::db::users::set_email(&app.pool, lead, "lead1@example.org")
        .await
        .unwrap();
    AlertSite {
        app,
        admin,
        project: p,
        lead,
        password,
        inbox,
        arrived,
    }
}

impl AlertSite {
    /// Gives `p1` a budget of 100.00 with a 50 % alert threshold, buys 8 GPUs x 7.5 h
    /// (60.00) as its lead and returns the two alert mails (actual spend and forecast) once
    /// both arrived.
    pub async fn spend_past_half(&self) -> Vec<(Vec<String>, String)> {
        let AlertSite {
            app,
            admin,
            project: p,
            inbox,
            arrived,
            ..
        } = self;
        let p = *p;
        let tree = app.state.tree().await.unwrap();
        let update = tranche::db::tree::BudgetUpdate {
            period_budget_minor: Some(10_000),
            money_cap_minor: None,
            self_service_gpu_hours: 64,
            alert_thresholds: Some(vec![50]),
        };
        tranche::db::tree::update_project(
            &app.pool,
            admin,
            p,
            &update,
            &tree,
            (&app.state.site, jiff::Timestamp::now()),
        )
        .await
        .unwrap();
        let token = app.token_for("lead1").await;
        // 8 GPUs x 7.5 h x 1.00 = 60.00 of 100.00.
        let end = tomorrow_at(1)
            .checked_add(jiff::SignedDuration::from_mins(450))
            .unwrap();
        let (status, body) = app
            .api("POST", "/api/v1/contracts", Some(&token), Some(json!({"project": "p1", "cluster": "c", "gpu_model": "H100", "gpus": 8, "start": tomorrow_at(1).to_string(), "end": end.to_string()})))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        // Mail goes out in the background, one message per notice: the 50% threshold fires for
        // the actual spend and for the forecast (which is never below it), and only the actual
        // one is told (a forecast no higher than the spend says nothing new). Wait for it (the
        // timeout only guards against a hang), then read it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while inbox.lock().unwrap().is_empty() {
            tokio::time::timeout_at(deadline, arrived.notified())
                .await
                .expect("the e-mails did not arrive within 2 minutes");
        }
        inbox.lock().unwrap().clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_alerts_are_mailed_to_leads_with_an_address() {
    let site = alert_site().await;
    let (app, lead) = (&site.app, site.lead);
    assert!(
        tranche::db::users::set_email(&app.pool, lead, "not an address")
            .await
            .is_err()
    );
    let messages = site.spend_past_half().await;
    assert_eq!(messages.len(), 1);
    for (to, _) in &messages {
        assert_eq!(to, &vec!["lead1@example.org".to_string()]);
    }
    let data = &messages
        .iter()
        .find(|(_, d)| d.contains("(actual)"))
        .expect("the actual-spend alert")
        .1;
    assert!(
        data.contains("Subject: Tranche budget alert: p1 at 50% (actual)"),
        "{data}"
    );
    assert!(data.contains("60.00 USD of 100.00 USD"), "{data}");
}
