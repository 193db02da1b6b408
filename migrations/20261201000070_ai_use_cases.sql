-- The AI use-case register (docs/ai-use-cases.md): each use of AI beyond the GPU cluster has an
-- owner team (a tree node), the data it may use, what the AI does, where a person reviews it,
-- a monthly limit in minor units of the site's currency, a metric, a stop rule and a bag
-- (personal productivity, team processes, critical systems). GPU projects may belong to it:
-- their ledger spend counts towards it.
CREATE TABLE ai_use_cases (
    id                  BIGSERIAL PRIMARY KEY,
    name                TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 120 AND name = btrim(name)),
    owner_node_id       BIGINT NOT NULL REFERENCES tree_nodes (id),
    bag                 TEXT NOT NULL CHECK (bag IN ('personal', 'team', 'critical')),
    status              TEXT NOT NULL DEFAULT 'proposed' CHECK (status IN ('proposed', 'pilot', 'active', 'stopped')),
    allowed_data        TEXT NOT NULL CHECK (length(allowed_data) <= 2000),
    ai_action           TEXT NOT NULL CHECK (length(ai_action) <= 2000),
    human_review        TEXT NOT NULL CHECK (length(human_review) <= 2000),
    monthly_limit_minor BIGINT NOT NULL CHECK (monthly_limit_minor >= 0),
    metric              TEXT NOT NULL CHECK (length(metric) <= 2000),
    stop_rule           TEXT NOT NULL CHECK (length(stop_rule) <= 2000),
    -- Outside services it may use ("OpenAI API", "GitHub Copilot"), free text.
    services            TEXT[] NOT NULL DEFAULT '{}' CHECK (cardinality(services) <= 50),
    created_by          BIGINT REFERENCES users (id),
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX ai_use_cases_owner ON ai_use_cases (owner_node_id);

CREATE TABLE ai_use_case_projects (
    use_case_id BIGINT NOT NULL REFERENCES ai_use_cases (id) ON DELETE CASCADE,
    project_id  BIGINT NOT NULL REFERENCES projects (node_id),
    PRIMARY KEY (use_case_id, project_id)
);
CREATE INDEX ai_use_case_projects_project ON ai_use_case_projects (project_id);
