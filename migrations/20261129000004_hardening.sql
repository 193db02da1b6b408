-- Sessions end when a password changes (the epoch is copied into the session at sign-in);
-- repeated failed sign-ins lock an account for a while; tokens can be revoked; names that
-- differ only by case are one name.
ALTER TABLE users
    ADD COLUMN session_epoch   INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN failed_logins   INTEGER NOT NULL DEFAULT 0 CHECK (failed_logins >= 0),
    ADD COLUMN locked_until    TIMESTAMPTZ;
ALTER TABLE api_tokens ADD COLUMN revoked_at TIMESTAMPTZ;

CREATE UNIQUE INDEX users_name_ci ON users (lower(name));
CREATE UNIQUE INDEX tree_nodes_name_ci ON tree_nodes (lower(name));
CREATE UNIQUE INDEX gpu_models_name_ci ON gpu_models (lower(name));
CREATE UNIQUE INDEX clusters_name_ci ON clusters (lower(name));
-- Host names are unique across clusters: an agent registers by its host name.
CREATE UNIQUE INDEX nodes_name_ci ON nodes (lower(name));
