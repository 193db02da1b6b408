-- Human cost of AI use cases (docs/ai-use-cases.md, "Human cost"): hours people spend on a use
-- case in a month (preparing data, reviewing answers, chasing exceptions), priced at the use
-- case's hourly rate (minor units of the site's currency), shown beside the service spend.
ALTER TABLE ai_use_cases ADD COLUMN human_hourly_rate_minor BIGINT NOT NULL DEFAULT 0
    CHECK (human_hourly_rate_minor >= 0);

CREATE TABLE ai_human_hours (
    id           BIGSERIAL PRIMARY KEY,
    use_case_id  BIGINT NOT NULL REFERENCES ai_use_cases (id) ON DELETE CASCADE,
    period_start TIMESTAMPTZ NOT NULL,
    -- Minutes, so that a quarter of an hour is exact.
    minutes      INTEGER NOT NULL CHECK (minutes > 0 AND minutes <= 744 * 60 * 100),
    activity     TEXT NOT NULL CHECK (activity IN ('data', 'review', 'exceptions')),
    note         TEXT NOT NULL CHECK (length(note) <= 500),
    recorded_by  BIGINT REFERENCES users (id),
    recorded_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX ai_human_hours_use_case ON ai_human_hours (use_case_id, period_start);
