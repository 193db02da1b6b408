-- Idle (squatting) flags and drains for repair (issue 13).
--
-- A running run's GPUs are idle while every one of them reports utilization under the site's
-- threshold (TRANCHE_IDLE_UTILIZATION_PERCENT). The agents' heartbeats keep `idle_since`: the
-- instant all of the attempt `idle_attempt`'s GPUs went under it (NULL while any is busy or
-- unknown). Past TRANCHE_IDLE_AFTER_S the run is flagged; the flag clears when utilization
-- comes back, when the attempt ends, or when a lead stops the run.
ALTER TABLE runs
    ADD COLUMN idle_since   TIMESTAMPTZ,
    ADD COLUMN idle_attempt INTEGER;
CREATE INDEX runs_idle ON runs (idle_since) WHERE idle_since IS NOT NULL;

CREATE TABLE idle_flags (
    id          BIGSERIAL PRIMARY KEY,
    run_id      BIGINT NOT NULL REFERENCES runs (id),
    attempt     INTEGER NOT NULL,
    -- GPUs the attempt holds, and since when all of them were under the threshold.
    gpus        INTEGER NOT NULL CHECK (gpus > 0),
    idle_since  TIMESTAMPTZ NOT NULL,
    flagged_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Cleared: utilization came back (recovered), the attempt ended (ended), or a lead
    -- stopped the run (stopped, with who and why).
    cleared_at  TIMESTAMPTZ,
    cleared_why TEXT CHECK (cleared_why IN ('recovered', 'ended', 'stopped')),
    stopped_by  BIGINT REFERENCES users (id),
    stop_reason TEXT CHECK (length(stop_reason) BETWEEN 1 AND 1000),
    CHECK ((cleared_at IS NULL) = (cleared_why IS NULL)),
    CHECK (cleared_why IS DISTINCT FROM 'stopped' OR (stopped_by IS NOT NULL AND stop_reason IS NOT NULL))
);
-- At most one open flag per run.
CREATE UNIQUE INDEX idle_flags_open ON idle_flags (run_id) WHERE cleared_at IS NULL;
CREATE INDEX idle_flags_run ON idle_flags (run_id);

-- Drains for repair: one row per drain of a node, from the admin's drain (with a reason) to
-- the return to service. `emptied_at` is when the scheduling core first reported the node
-- empty; `needed_human` is set when an admin had to stop a protected run on it (or set it
-- down) before it emptied by itself.
CREATE TABLE node_drains (
    id           BIGSERIAL PRIMARY KEY,
    node_id      BIGINT NOT NULL REFERENCES nodes (id),
    reason       TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
    drained_by   BIGINT REFERENCES users (id),
    drained_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    emptied_at   TIMESTAMPTZ,
    needed_human BOOLEAN NOT NULL DEFAULT false,
    returned_at  TIMESTAMPTZ,
    returned_by  BIGINT REFERENCES users (id),
    CHECK (emptied_at IS NULL OR emptied_at >= drained_at),
    CHECK (returned_at IS NULL OR returned_at >= drained_at)
);
-- At most one open drain per node.
CREATE UNIQUE INDEX node_drains_open ON node_drains (node_id) WHERE returned_at IS NULL;
CREATE INDEX node_drains_at ON node_drains (drained_at);
