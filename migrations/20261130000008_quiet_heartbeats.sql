-- Agents' heartbeats and sessions (agent_seen_at, gpu_utilization, agent_session) are not
-- inventory: the tree cache's counter must not move for them. Its statement trigger on
-- `nodes` fired on every heartbeat and made every pass and sync queue on the one counter row.
DROP TRIGGER nodes_bump ON nodes;
CREATE TRIGGER nodes_bump AFTER INSERT OR DELETE OR TRUNCATE ON nodes
    FOR EACH STATEMENT EXECUTE FUNCTION bump_tree_version();
CREATE TRIGGER nodes_inventory_bump AFTER UPDATE OF cluster_id, name, gpu_model_id, gpu_count, state ON nodes
    FOR EACH STATEMENT EXECUTE FUNCTION bump_tree_version();

-- What the running allocated runs of each project hold of its budget: the GPU-seconds of
-- their minimum runtime not charged yet, per GPU model. Only passes (and cancels and agent
-- registrations, under the pass lock) start, charge and stop runs, so they rewrite it; a
-- submission's budget check reads a few rows instead of summing every running run.
CREATE TABLE project_holds (
    project_id   BIGINT NOT NULL REFERENCES projects (node_id),
    gpu_model_id BIGINT NOT NULL REFERENCES gpu_models (id),
    gpu_seconds  BIGINT NOT NULL CHECK (gpu_seconds > 0),
    PRIMARY KEY (project_id, gpu_model_id)
);

-- A submission may carry a key chosen by its client (the API's Idempotency-Key header; the
-- run form's one-time field): a repeat with the same key returns the first run instead of
-- creating a second one (a double click, a client retrying after a timeout).
ALTER TABLE runs ADD COLUMN idempotency_key TEXT CHECK (length(idempotency_key) BETWEEN 1 AND 255);
CREATE UNIQUE INDEX runs_idempotency ON runs (submitted_by, idempotency_key) WHERE idempotency_key IS NOT NULL;
