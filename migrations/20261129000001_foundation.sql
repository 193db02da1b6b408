-- Portal foundation: accounts, roles, the program tree, inventory, audit log.
-- Money is in integer minor units of the configured currency; shares are basis points
-- (1/100 of a percent) of the parent; instants are timestamptz.

CREATE TABLE users (
    id            BIGSERIAL PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    password_hash TEXT,
    disabled      BOOLEAN NOT NULL DEFAULT false,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE tree_nodes (
    id         BIGSERIAL PRIMARY KEY,
    parent_id  BIGINT REFERENCES tree_nodes (id),
    name       TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 64 AND name = btrim(name)),
    is_project BOOLEAN NOT NULL DEFAULT false,
    share_bp   INTEGER NOT NULL CHECK (share_bp BETWEEN 0 AND 10000),
    archived   BOOLEAN NOT NULL DEFAULT false,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (parent_id IS NOT NULL OR NOT is_project),
    CHECK (parent_id IS DISTINCT FROM id)
);
-- Exactly one root.
CREATE UNIQUE INDEX tree_nodes_one_root ON tree_nodes ((true)) WHERE parent_id IS NULL;
CREATE INDEX tree_nodes_parent ON tree_nodes (parent_id);

-- Siblings' shares (of live nodes) sum to at most 100%, checked at commit.
CREATE FUNCTION tree_nodes_check_sibling_shares() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total BIGINT;
BEGIN
    IF NEW.parent_id IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT coalesce(sum(share_bp), 0) INTO total
      FROM tree_nodes WHERE parent_id = NEW.parent_id AND NOT archived;
    IF total > 10000 THEN
        RAISE EXCEPTION 'shares of the children of node % sum to % basis points, over 100%%', NEW.parent_id, total
            USING ERRCODE = 'check_violation', CONSTRAINT = 'sibling_shares_at_most_100';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER tree_nodes_sibling_shares
    AFTER INSERT OR UPDATE OF share_bp, parent_id, archived ON tree_nodes
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION tree_nodes_check_sibling_shares();

-- A project's budget settings (the "budget bag"); one row per project node.
CREATE TABLE projects (
    node_id                BIGINT PRIMARY KEY REFERENCES tree_nodes (id),
    -- Period budget in minor units; NULL means the money value of the entitlement.
    period_budget_minor    BIGINT CHECK (period_budget_minor >= 0),
    -- Optional monthly money cap in minor units; can only lower the budget.
    money_cap_minor        BIGINT CHECK (money_cap_minor >= 0),
    -- Largest protected contract (GPUs x minimum runtime) startable without approval, GPU-hours.
    self_service_gpu_hours INTEGER NOT NULL DEFAULT 64 CHECK (self_service_gpu_hours >= 0)
);

CREATE TABLE project_members (
    project_id BIGINT NOT NULL REFERENCES projects (node_id),
    user_id    BIGINT NOT NULL REFERENCES users (id),
    PRIMARY KEY (project_id, user_id)
);

-- Roles: admin and finance are global; lead is scoped to a tree node and its subtree;
-- researcher works in the projects the user is a member of.
CREATE TABLE role_grants (
    id      BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users (id),
    role    TEXT NOT NULL CHECK (role IN ('admin', 'finance', 'lead', 'researcher')),
    node_id BIGINT REFERENCES tree_nodes (id),
    CHECK ((role = 'lead') = (node_id IS NOT NULL))
);
CREATE UNIQUE INDEX role_grants_unique ON role_grants (user_id, role, coalesce(node_id, 0));

CREATE TABLE api_tokens (
    id           BIGSERIAL PRIMARY KEY,
    user_id      BIGINT NOT NULL REFERENCES users (id),
    -- SHA-256 of the token; the token itself is shown once and never stored.
    token_sha256 BYTEA NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    label        TEXT NOT NULL DEFAULT '' CHECK (length(label) <= 100),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_used_at TIMESTAMPTZ
);

CREATE TABLE gpu_models (
    id                       BIGSERIAL PRIMARY KEY,
    name                     TEXT NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$'),
    -- Billing weight in thousandths (1000 = 1.0): weights GPU-hours across models.
    billing_weight_milli     INTEGER NOT NULL CHECK (billing_weight_milli > 0 AND billing_weight_milli <= 100000),
    -- Price of one weighted GPU-hour in minor units.
    price_per_gpu_hour_minor BIGINT NOT NULL CHECK (price_per_gpu_hour_minor >= 0 AND price_per_gpu_hour_minor <= 100000000)
);

CREATE TABLE clusters (
    id   BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$')
);

CREATE TABLE nodes (
    id           BIGSERIAL PRIMARY KEY,
    cluster_id   BIGINT NOT NULL REFERENCES clusters (id),
    name         TEXT NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    gpu_model_id BIGINT NOT NULL REFERENCES gpu_models (id),
    gpu_count    INTEGER NOT NULL CHECK (gpu_count BETWEEN 1 AND 64),
    state        TEXT NOT NULL DEFAULT 'up' CHECK (state IN ('up', 'draining', 'down')),
    UNIQUE (cluster_id, name)
);
CREATE INDEX nodes_cluster ON nodes (cluster_id);

-- Every change to shares, budgets, inventory, users and roles: who, when, what, before, after.
CREATE TABLE audit_log (
    id        BIGSERIAL PRIMARY KEY,
    at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    actor_id  BIGINT REFERENCES users (id),
    action    TEXT NOT NULL,
    entity    TEXT NOT NULL,
    entity_id BIGINT,
    -- The tree node the change concerns, so leads see their subtree's entries.
    node_id   BIGINT REFERENCES tree_nodes (id),
    before    JSONB,
    after     JSONB
);
CREATE INDEX audit_log_at ON audit_log (at DESC);
CREATE INDEX audit_log_node ON audit_log (node_id);

-- Marks that the demo organisation was loaded.
CREATE TABLE site_flags (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    set_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
