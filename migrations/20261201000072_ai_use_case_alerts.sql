-- Monthly limits of AI use cases through the budget-alert machinery (docs/ai-use-cases.md,
-- "Limits and alerts"): thresholds in percent of the monthly limit, each firing once per
-- period for actual spend and once for the forecast; for the critical-systems bag a crossed
-- limit raises "stop rule triggered", which the owner acknowledges.
ALTER TABLE ai_use_cases ADD COLUMN alert_thresholds INTEGER[] NOT NULL DEFAULT '{50,75,90,100}'
    CHECK (cardinality(alert_thresholds) <= 10 AND 1 <= ALL (alert_thresholds) AND 100 >= ALL (alert_thresholds));

CREATE TABLE ai_use_case_alerts (
    id            BIGSERIAL PRIMARY KEY,
    use_case_id   BIGINT NOT NULL REFERENCES ai_use_cases (id) ON DELETE CASCADE,
    period_start  TIMESTAMPTZ NOT NULL,
    threshold_pct INTEGER NOT NULL CHECK (threshold_pct BETWEEN 1 AND 100),
    kind          TEXT NOT NULL CHECK (kind IN ('actual', 'forecast')),
    spent_minor   BIGINT NOT NULL,
    limit_minor   BIGINT NOT NULL,
    fired_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (use_case_id, period_start, threshold_pct, kind)
);

CREATE TABLE ai_stop_triggers (
    id              BIGSERIAL PRIMARY KEY,
    use_case_id     BIGINT NOT NULL REFERENCES ai_use_cases (id) ON DELETE CASCADE,
    period_start    TIMESTAMPTZ NOT NULL,
    reason          TEXT NOT NULL,
    triggered_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    acknowledged_by BIGINT REFERENCES users (id),
    acknowledged_at TIMESTAMPTZ,
    note            TEXT NOT NULL DEFAULT '' CHECK (length(note) <= 2000),
    UNIQUE (use_case_id, period_start),
    CHECK ((acknowledged_by IS NULL) = (acknowledged_at IS NULL))
);
