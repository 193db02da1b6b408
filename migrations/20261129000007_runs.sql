-- Runs, their GPUs, their history, approvals, node agents.
--
-- A run's life: waiting_approval -> (denied) | queued -> starting -> running -> succeeded |
-- failed; from starting/running a stop (preemption, cancel, time limit, node lost) moves it to
-- stopping while its agent sends SIGTERM and waits the grace period, then to queued again
-- (resumable, preempted), preempted (not resumable), cancelled, failed (time limit) or lost.
-- A GPU is held through gpu_holds, whose primary key makes "one run per GPU" a database fact.

CREATE TABLE runs (
    id               BIGSERIAL PRIMARY KEY,
    project_id       BIGINT NOT NULL REFERENCES projects (node_id),
    cluster_id       BIGINT NOT NULL REFERENCES clusters (id),
    gpu_model_id     BIGINT NOT NULL REFERENCES gpu_models (id),
    submitted_by     BIGINT NOT NULL REFERENCES users (id),
    gpus             INTEGER NOT NULL CHECK (gpus BETWEEN 1 AND 100000),
    min_runtime_s    BIGINT NOT NULL CHECK (min_runtime_s >= 0),
    time_limit_s     BIGINT NOT NULL CHECK (time_limit_s > 0 AND time_limit_s >= min_runtime_s),
    priority         INTEGER NOT NULL DEFAULT 0,
    resumable        BOOLEAN NOT NULL DEFAULT false,
    command          TEXT NOT NULL CHECK (length(command) BETWEEN 1 AND 8192),
    workdir          TEXT CHECK (workdir IS NULL OR length(workdir) <= 4096),
    env              JSONB NOT NULL DEFAULT '{}',
    state            TEXT NOT NULL CHECK (state IN ('waiting_approval', 'denied', 'queued', 'starting',
                         'running', 'stopping', 'succeeded', 'failed', 'cancelled', 'preempted', 'lost')),
    submitted_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- When it last entered the queue (submission, approval or requeue): its place in line.
    queued_at        TIMESTAMPTZ,
    -- Current or last attempt (0 before the first start).
    attempt          INTEGER NOT NULL DEFAULT 0,
    started_at       TIMESTAMPTZ,
    ended_at         TIMESTAMPTZ,
    contract_id      BIGINT REFERENCES contracts (id),
    -- Seconds of the current attempt already charged to the ledger.
    charged_s        BIGINT NOT NULL DEFAULT 0,
    -- While stopping: why (preempted, cancelled, time_limit, failed: a gang member failed, lost: its node was lost) and the kill deadline.
    stop_kind        TEXT CHECK (stop_kind IN ('preempted', 'cancelled', 'time_limit', 'failed', 'lost')),
    kill_at          TIMESTAMPTZ,
    exit_code        INTEGER,
    -- The core's latest reason while queued, in words, and its estimate.
    wait_reason      TEXT,
    estimated_start  TIMESTAMPTZ,
    -- Approval decision.
    decided_by       BIGINT REFERENCES users (id),
    decided_at       TIMESTAMPTZ,
    decision_reason  TEXT,
    CHECK (jsonb_typeof(env) = 'object')
);
CREATE INDEX runs_active ON runs (cluster_id, state) WHERE state IN ('queued', 'starting', 'running', 'stopping');
CREATE INDEX runs_project ON runs (project_id, id);
-- What a project's running runs hold of its budget is read at every submission.
CREATE INDEX runs_running_project ON runs (project_id) WHERE state IN ('starting', 'running');
CREATE INDEX runs_submitter ON runs (submitted_by, id);
CREATE INDEX runs_approval ON runs (project_id) WHERE state = 'waiting_approval';

-- Where each attempt ran: one row per node of the gang, with the agent's view of its process.
CREATE TABLE run_placements (
    run_id      BIGINT NOT NULL REFERENCES runs (id),
    attempt     INTEGER NOT NULL,
    node_id     BIGINT NOT NULL REFERENCES nodes (id),
    gpu_indices INTEGER[] NOT NULL,
    -- assigned: the agent has not confirmed it yet; running; exited.
    proc_state  TEXT NOT NULL DEFAULT 'assigned' CHECK (proc_state IN ('assigned', 'running', 'exited')),
    exit_code   INTEGER,
    PRIMARY KEY (run_id, attempt, node_id)
);
CREATE INDEX run_placements_node ON run_placements (node_id) WHERE proc_state <> 'exited';

-- GPUs held now: at most one run per GPU.
CREATE TABLE gpu_holds (
    node_id   BIGINT NOT NULL REFERENCES nodes (id),
    gpu_index INTEGER NOT NULL CHECK (gpu_index >= 0),
    run_id    BIGINT NOT NULL REFERENCES runs (id),
    PRIMARY KEY (node_id, gpu_index)
);
CREATE INDEX gpu_holds_run ON gpu_holds (run_id);

-- The timeline of a run: every state it entered, with why.
CREATE TABLE run_events (
    id        BIGSERIAL PRIMARY KEY,
    run_id    BIGINT NOT NULL REFERENCES runs (id),
    -- When it was written (not the transaction's start: a pass may wait for its lock).
    at        TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    -- submitted, waiting_approval, approved, denied, queued, started, running, preempted,
    -- requeued, succeeded, failed, cancel_requested, cancelled, lost, time_limit, unallocated.
    kind      TEXT NOT NULL,
    message   TEXT NOT NULL DEFAULT '',
    -- For a preemption: the run it made room for.
    for_run   BIGINT REFERENCES runs (id),
    attempt   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX run_events_run ON run_events (run_id, id);

-- Node agents: one token per cluster (hashed), and the live session of each node.
CREATE TABLE agent_tokens (
    id          BIGSERIAL PRIMARY KEY,
    cluster_id  BIGINT NOT NULL REFERENCES clusters (id),
    token_hash  BYTEA NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at  TIMESTAMPTZ
);

ALTER TABLE nodes
    ADD COLUMN agent_session TEXT,
    ADD COLUMN agent_seen_at TIMESTAMPTZ,
    -- Latest per-GPU utilization, percent, index order (NULL entries where unknown).
    ADD COLUMN gpu_utilization SMALLINT[];
