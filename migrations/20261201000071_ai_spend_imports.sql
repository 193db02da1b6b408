-- Imported spend of outside AI services (docs/ai-use-cases.md, "Imports"): one row per
-- imported file (its SHA-256 makes a repeated upload add nothing), one row per cost line with
-- a content hash (a line already imported by another file is skipped), in millionths of the
-- site's currency after conversion. Mapping rules assign lines to use cases; lines no rule
-- matches stay, unassigned, until a rule does.
CREATE TABLE ai_mapping_rules (
    id          BIGSERIAL PRIMARY KEY,
    use_case_id BIGINT NOT NULL REFERENCES ai_use_cases (id) ON DELETE CASCADE,
    -- The export format the rule applies to, or any.
    source      TEXT NOT NULL CHECK (source IN ('any', 'openai', 'anthropic', 'github', 'focus')),
    -- Service name (case-insensitive), '' for any.
    service     TEXT NOT NULL CHECK (length(service) <= 200),
    -- Project id, workspace id, cost centre, organization, sub-account or tag `key=value`; '' for any.
    scope       TEXT NOT NULL CHECK (length(scope) <= 200),
    created_by  BIGINT REFERENCES users (id),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (service <> '' OR scope <> ''),
    UNIQUE (source, service, scope)
);

CREATE TABLE ai_spend_imports (
    id            BIGSERIAL PRIMARY KEY,
    source        TEXT NOT NULL CHECK (source IN ('openai', 'anthropic', 'github', 'focus')),
    file_name     TEXT NOT NULL CHECK (length(file_name) <= 255),
    file_sha256   BYTEA NOT NULL UNIQUE,
    currency      TEXT NOT NULL,
    -- Site currency per unit of the file's currency, millionths; NULL when they are the same.
    rate_micro    BIGINT CHECK (rate_micro > 0),
    rows_new      INTEGER NOT NULL,
    rows_skipped  INTEGER NOT NULL,
    amount_micro  BIGINT NOT NULL,
    imported_by   BIGINT REFERENCES users (id),
    imported_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE ai_spend_rows (
    id              BIGSERIAL PRIMARY KEY,
    import_id       BIGINT NOT NULL REFERENCES ai_spend_imports (id),
    row_sha256      BYTEA NOT NULL UNIQUE,
    source          TEXT NOT NULL,
    service         TEXT NOT NULL,
    -- The values rules match: project / workspace / cost centre / tags.
    scopes          TEXT[] NOT NULL,
    description     TEXT NOT NULL,
    period_start    TIMESTAMPTZ NOT NULL,
    period_end      TIMESTAMPTZ NOT NULL,
    -- In the site's currency, millionths of a unit (a cent is 10,000).
    amount_micro    BIGINT NOT NULL,
    original_amount TEXT NOT NULL,
    original_currency TEXT NOT NULL,
    use_case_id     BIGINT REFERENCES ai_use_cases (id) ON DELETE SET NULL,
    CHECK (period_end >= period_start)
);
CREATE INDEX ai_spend_rows_use_case ON ai_spend_rows (use_case_id, period_start);
CREATE INDEX ai_spend_rows_unassigned ON ai_spend_rows (period_start) WHERE use_case_id IS NULL;
