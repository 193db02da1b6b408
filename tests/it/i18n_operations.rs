//! The operations pages in Basque and Spanish (docs/i18n.md): an admin whose own language is
//! Basque reads the inventory, a cluster, a drained node, users, a tree node, the capacity
//! calendar, the metrics, an idle flag and the audit log, and gets a form's error in Basque
//! with the input kept; a Spanish admin reads the cluster and node pages.

use axum::http::StatusCode;
use serde_json::json;

use crate::support::{Client, TestApp, demo_password};

/// The demo organisation with two nodes declared on `local`, `ops-1` drained for repair by
/// the page's form, and a signed-in demo admin whose own language is `lang`: (app, admin's
/// client, cluster id of `local`, node id of `ops-1`).
async fn drained_site(lang: &str) -> (TestApp, Client, i64, i64) {
    let (app, users) = TestApp::with_demo().await;
    app.declare_nodes(&["ops-1", "ops-2"]).await;
    let (name, pw) = demo_password(&users, "admin");
    sqlx::query("UPDATE users SET language = $1 WHERE name = $2")
        .bind(lang)
        .bind(&name)
        .execute(&app.pool)
        .await
        .unwrap();
    let mut admin = app.client();
    admin.login(&name, &pw).await;
    let cluster: i64 = sqlx::query_scalar("SELECT id FROM clusters WHERE name = 'local'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let node: i64 = sqlx::query_scalar("SELECT id FROM nodes WHERE name = 'ops-1'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (status, _, _) = admin.get(&format!("/admin/nodes/{node}")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body, location) = admin
        .post(
            &format!("/admin/nodes/{node}/drain"),
            &[("reason", "GPU 3 aldatu (XID 79)")],
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{body}");
    assert_eq!(
        location.as_deref(),
        Some(format!("/admin/nodes/{node}").as_str())
    );
    // The metrics window ends at the current whole second: a drain begun within it would
    // not count yet.
    sqlx::query("UPDATE node_drains SET drained_at = drained_at - interval '1 minute'")
        .execute(&app.pool)
        .await
        .unwrap();
    (app, admin, cluster, node)
}

/// Asserts that `page` contains every one of `present` and none of `absent`.
fn check(page: &str, present: &[&str], absent: &[&str]) {
    for text in present {
        assert!(page.contains(text), "missing {text:?} in:\n{page}");
    }
    for text in absent {
        assert!(!page.contains(text), "English {text:?} left in:\n{page}");
    }
}

#[tokio::test]
async fn a_basque_admin_reads_the_operations_pages() {
    let (app, mut admin, cluster, node) = drained_site("eu").await;

    // The drained node: the notice, its state and its drain, in Basque.
    let (status, page, _) = admin.get(&format!("/admin/nodes/{node}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<html lang=\"eu\">",
            "<h1>ops-1 nodoa</h1>",
            "← local klusterra",
            "Nodoa husten ari da: ez du exekuzio berririk hartzen.",
            "Itzuli zerbitzura",
            "<h2>Husteak</h2>",
            "GPU 3 aldatu (XID 79)",
            "oraindik ez",
            "<td>ez</td>",
            ": bere exekuzioak ilarara itzultzen dira",
            "(e)tik",
        ],
        &[
            "Return to service",
            "<h2>Drains</h2>",
            "Runs on it",
            "not yet",
            "draining since",
        ],
    );

    // The cluster: its nodes, their states and the admin's select.
    let (status, page, _) = admin.get(&format!("/admin/clusters/{cluster}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<h1>local klusterra</h1>",
            "16 × H100 2 nodotan.",
            "Exekutatzailea: <strong>agentea</strong>",
            "Deklaratu nodo bat",
            "Azken taupada",
            "agentearen zain",
            "<option value=\"draining\" selected>husten</option>",
            "<option value=\"up\" selected>zerbitzuan</option>",
            "ops-1: egoera",
            "<strong>galdua</strong>",
        ],
        &[
            "Declare a node",
            "Last heartbeat",
            "awaiting agent",
            "Admin state",
            " nodes.",
        ],
    );

    // A form error in Basque, with what was typed kept.
    let (status, page, _) = admin
        .post(
            &format!("/admin/clusters/{cluster}/nodes"),
            &[
                ("name", "ops-3"),
                ("gpu_model", "H100"),
                ("gpu_count", "bi"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    check(
        &page,
        &[
            "GPU kopuruak zenbaki oso bat izan behar du (&#34;bi&#34; idatzi da)",
            "name=\"name\" value=\"ops-3\"",
            "name=\"gpu_count\" value=\"bi\"",
        ],
        &["must be a whole number"],
    );
    let (status, page, _) = admin
        .post(
            &format!("/admin/clusters/{cluster}/nodes"),
            &[("name", "ops-2"), ("gpu_model", "H100"), ("gpu_count", "8")],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    assert!(
        page.contains("&#34;ops-2&#34; izeneko nodo bat badago jada"),
        "{page}"
    );

    // The inventory: Basque digits in the GPU totals (1,024 H100 on h100-east).
    let (status, page, _) = admin.get("/admin/inventory").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<h1>Inbentarioa</h1>",
            "<h2>GPU modeloak</h2>",
            "Fakturazio-pisua",
            "Gehitu GPU modelo bat",
            "1.024 × H100",
            "H100: fakturazio-pisua",
        ],
        &[
            "<h1>Inventory</h1>",
            "Billing weight",
            "Add a GPU model",
            "1024 × H100",
        ],
    );
    let (status, page, _) = admin
        .post(
            "/admin/gpu-models",
            &[
                ("name", "A100"),
                ("billing_weight", "-1"),
                ("price", "2.00"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    check(
        &page,
        &[
            "fakturazio-pisuak positiboa izan behar du (-1 idatzi da)",
            "name=\"billing_weight\" value=\"-1\"",
        ],
        &["must be positive"],
    );

    // Users and roles: role names and a lead's node in Basque.
    let (status, page, _) = admin.get("/admin/users").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<h1>Erabiltzaileak eta rolak</h1>",
            "Sortu erabiltzaile bat",
            "<option value=\"researcher\" selected>ikertzailea</option>",
            "nodoaren arduraduna",
            "Aktibatuta dago kontu lokal guztientzat.",
        ],
        &["Users and roles", "Grant a role", "Password sign-in"],
    );
    let (status, page, _) = admin
        .post(
            "/admin/users",
            &[("name", "a b"), ("role", "lead"), ("node", "")],
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    check(
        &page,
        &[
            "&#34;a b&#34; ez da erabiltzaile izen baliozkoa",
            "name=\"name\" value=\"a b\"",
            "<option value=\"lead\" selected>arduraduna</option>",
        ],
        &["is not a valid user name"],
    );

    // A node of the program tree.
    let fm = app.node_id("Foundation Models").await;
    let (status, page, _) = admin.get(&format!("/tree/nodes/{fm}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "Gurasoarekiko kuota: <strong>% ",
            "<h2>Haur-nodoen kuotak</h2>",
            "Gorde kuotak",
            "Gehitu haur-nodo bat",
            "programa / taldea",
        ],
        &["Share of parent", "Save shares", "Add a child"],
    );

    // The capacity calendar.
    let (status, page, _) = admin.get("/capacity?pool=b200-west%2FB200").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<h1>Edukiera-egutegia</h1>",
            "Instalatutako GPUak: <strong>256</strong>",
            "Gelaxka bakoitza ordu bat da",
            ">erosi</a>",
            "kontratagarri geratzen direnak",
        ],
        &[
            "Capacity calendar",
            "GPUs installed",
            ">buy</a>",
            "contractable left",
        ],
    );

    // The metrics: headings, percentages and the drain begun above.
    let (status, page, _) = admin.get("/dashboard?window=24h").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<h1>Neurketak</h1>",
            "Erabilgarritasuna",
            "<h2>Husteak konpontzeko</h2>",
            "Tarte honetan konpontzeko huste bat hasi da: berez hustuak, 0;",
            "oraindik husten, 1.",
            "azken 24 orduak",
            "Okupazioa GPU multzoka",
        ],
        &[
            "Availability",
            "Drains for repair",
            "drains for repair began",
            "last 24 hours",
        ],
    );

    // An idle flag on the home page, and its stop form's error.
    let researcher = app.token_for("demo-researcher").await;
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/runs",
            Some(&researcher),
            Some(json!({"project": "fm-pretrain-7b", "cluster": "local", "gpu_model": "H100",
                        "gpus": 1, "min_runtime_s": 0, "time_limit_s": 3600, "command": "sleep 600"})),
        )
        .await;
    assert!(status.is_success(), "{answer}");
    let run = answer["id"].as_i64().unwrap();
    sqlx::query("UPDATE runs SET state = 'running', attempt = 1, started_at = now() WHERE id = $1")
        .bind(run)
        .execute(&app.pool)
        .await
        .unwrap();
    let flag: i64 = sqlx::query_scalar(
        "INSERT INTO idle_flags (run_id, attempt, gpus, idle_since) VALUES ($1, 1, 1, now() - interval '90 minutes') RETURNING id",
    )
    .bind(run)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let (status, page, _) = admin.get("/").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "Geldirik noiztik",
            "GPU-ordu geldiak",
            "<td class=\"num idle-gpu-hours\">1,5</td>",
            &format!("{run}. exekuzioa gelditzeko arrazoia"),
            ">Gelditu</button>",
        ],
        &["Idle since", "GPU-hours idle", ">Stop</button>"],
    );
    let (status, page, _) = admin
        .post(&format!("/idle-flags/{flag}/stop"), &[("reason", " ")])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{page}");
    check(
        &page,
        &["eman exekuzioa gelditzeko arrazoi bat"],
        &["give a reason"],
    );

    // The audit log, with the drain recorded.
    let (status, page, _) = admin.get("/audit").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<h1>Auditoria-erregistroa</h1>",
            "Aldaketa guztiak, berrienetik hasita",
            "<th>Noiz (",
            "<th>Nor</th>",
            "<td>Nodoa konpontzeko husten</td><td>klusterreko nodoa #",
            "<code>reason</code>: GPU 3 aldatu (XID 79)",
        ],
        &[
            "node.drain",
            "cluster_node",
            "<h1>Audit log</h1>",
            "<th>Who</th>",
            "All changes",
            "newest first",
        ],
    );
}

#[tokio::test]
async fn a_spanish_admin_reads_a_cluster_and_a_drained_node() {
    let (_app, mut admin, cluster, node) = drained_site("es").await;
    let (status, page, _) = admin.get(&format!("/admin/clusters/{cluster}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<html lang=\"es\">",
            "<h1>Clúster local</h1>",
            "16 × H100 en 2 nodos.",
            "Declarar un nodo",
            "Último latido",
            "esperando agente",
            "<option value=\"draining\" selected>en vaciado</option>",
        ],
        &["Declare a node", "Last heartbeat", "awaiting agent"],
    );
    let (status, page, _) = admin.get(&format!("/admin/nodes/{node}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<h1>Nodo ops-1</h1>",
            "Devolver al servicio",
            "<h2>Vaciados</h2>",
            "en vaciado desde ",
            "todavía no",
        ],
        &["Return to service", "Never drained", "not yet"],
    );
    // The drain on the metrics page, while it lasts.
    let (status, page, _) = admin.get("/dashboard?window=24h").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    check(
        &page,
        &[
            "<h1>Métricas</h1>",
            "Disponibilidad",
            "En este intervalo empezó 1 vaciado para reparación",
        ],
        &["Availability", "drains for repair began"],
    );
    // Back in service: the notice in Spanish.
    let (status, _, _) = admin
        .post(&format!("/admin/nodes/{node}/return"), &[])
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let (_, page, _) = admin.get(&format!("/admin/nodes/{node}")).await;
    check(
        &page,
        &["El nodo vuelve a estar en servicio.", ", por demo-admin"],
        &["Node is back in service."],
    );
}
