-- Budget alerts: thresholds per project (percent of the period budget), each firing once per
-- period for actual spend and once for the forecast; notifications in the app.
ALTER TABLE projects ADD COLUMN alert_thresholds INTEGER[] NOT NULL DEFAULT '{50,75,90}'
    CHECK (cardinality(alert_thresholds) <= 10 AND 1 <= ALL (alert_thresholds) AND 100 >= ALL (alert_thresholds));

CREATE TABLE budget_alerts (
    id            BIGSERIAL PRIMARY KEY,
    project_id    BIGINT NOT NULL REFERENCES projects (node_id),
    period_start  TIMESTAMPTZ NOT NULL,
    threshold_pct INTEGER NOT NULL CHECK (threshold_pct BETWEEN 1 AND 100),
    kind          TEXT NOT NULL CHECK (kind IN ('actual', 'forecast')),
    spent_minor   BIGINT NOT NULL,
    budget_minor  BIGINT NOT NULL,
    fired_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (project_id, period_start, threshold_pct, kind)
);

CREATE TABLE notifications (
    id         BIGSERIAL PRIMARY KEY,
    user_id    BIGINT NOT NULL REFERENCES users (id),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    message    TEXT NOT NULL,
    link       TEXT NOT NULL DEFAULT '',
    read_at    TIMESTAMPTZ
);
CREATE INDEX notifications_unread ON notifications (user_id) WHERE read_at IS NULL;
