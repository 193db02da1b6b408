//! The embedded default: a private PostgreSQL cluster in the data directory, initialised on
//! first start, stopped when the process that started it closes, and reused with its data.

use tranche::config::DatabaseSource;
use tranche::db::Database;

#[tokio::test]
async fn embedded_cluster_keeps_its_data_across_restarts() {
    let dir = std::env::temp_dir().join(format!("tranche-embedded-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("first start initialises the cluster");
    assert!(dir.join("postgres/PG_VERSION").exists());
    let pw = tranche::db::users::first_run(&db.pool).await.unwrap();
    assert!(pw.is_some());
    // A second opener joins the running server instead of starting another.
    let joined = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("join");
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&joined.pool)
        .await
        .unwrap();
    assert_eq!(users, 1);
    joined.close().await.unwrap();
    let still: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(still, 1, "closing the joiner leaves the server running");
    db.close().await.unwrap();
    assert!(
        !dir.join("postgres/postmaster.pid").exists(),
        "the starter stops the server"
    );
    // Start again: the data is still there and first run does not repeat.
    let db = Database::open(&DatabaseSource::Embedded, &dir)
        .await
        .expect("restart");
    assert!(
        tranche::db::users::first_run(&db.pool)
            .await
            .unwrap()
            .is_none()
    );
    let names: Vec<String> = sqlx::query_scalar("SELECT name FROM users")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(names, ["admin"]);
    db.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
