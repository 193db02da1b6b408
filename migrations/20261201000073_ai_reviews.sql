-- The monthly review of AI use cases (docs/ai-use-cases.md, "Monthly review"): for a month,
-- the owner decides continue, expand (with a new limit) or stop, with the metric's value and a
-- comment; every decision is kept, the latest for a month counts. Spend and limit at the time
-- of the decision are kept with it.
CREATE TABLE ai_reviews (
    id              BIGSERIAL PRIMARY KEY,
    use_case_id     BIGINT NOT NULL REFERENCES ai_use_cases (id) ON DELETE CASCADE,
    period_start    TIMESTAMPTZ NOT NULL,
    decision        TEXT NOT NULL CHECK (decision IN ('continue', 'expand', 'stop')),
    new_limit_minor BIGINT CHECK (new_limit_minor >= 0),
    metric_value    TEXT NOT NULL CHECK (length(metric_value) BETWEEN 1 AND 500),
    comment         TEXT NOT NULL CHECK (length(comment) <= 2000),
    spent_minor     BIGINT NOT NULL,
    limit_minor     BIGINT NOT NULL,
    decided_by      BIGINT REFERENCES users (id),
    decided_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((decision = 'expand') = (new_limit_minor IS NOT NULL))
);
CREATE INDEX ai_reviews_use_case ON ai_reviews (use_case_id, period_start);
