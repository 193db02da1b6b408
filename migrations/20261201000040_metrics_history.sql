-- History the metrics of docs/design.md section 5 need and nothing else records.

-- Installed and healthy GPUs of each pool (cluster, GPU model) over time: one row per stretch
-- [from_at, to_at), written by the active scheduler loop about once a minute. Healthy: the node
-- is up and served by a live agent, at the sample's instant.
CREATE TABLE gpu_health_samples (
    cluster_id     BIGINT NOT NULL REFERENCES clusters (id),
    gpu_model_id   BIGINT NOT NULL REFERENCES gpu_models (id),
    from_at        TIMESTAMPTZ NOT NULL,
    to_at          TIMESTAMPTZ NOT NULL,
    installed_gpus INTEGER NOT NULL CHECK (installed_gpus >= 0),
    healthy_gpus   INTEGER NOT NULL CHECK (healthy_gpus >= 0 AND healthy_gpus <= installed_gpus),
    PRIMARY KEY (cluster_id, gpu_model_id, from_at),
    CHECK (to_at > from_at)
);

-- Utilization agents reported for the GPUs an attempt held, per hour: busy GPU-seconds (the
-- seconds since the previous report times each held GPU's busy fraction) and observed
-- GPU-seconds (the same seconds times the held GPUs with a reading).
CREATE TABLE run_utilization (
    run_id         BIGINT NOT NULL REFERENCES runs (id),
    attempt        INTEGER NOT NULL,
    hour           TIMESTAMPTZ NOT NULL,
    busy_gpu_s     DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (busy_gpu_s >= 0),
    observed_gpu_s DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (observed_gpu_s >= busy_gpu_s - 1e-6),
    PRIMARY KEY (run_id, attempt, hour)
);
CREATE INDEX run_utilization_hour ON run_utilization (hour);

-- The instant of the last utilization report counted for a placement.
ALTER TABLE run_placements ADD COLUMN utilization_at TIMESTAMPTZ;

-- The metrics read events by kind over a window (starts, preemptions).
CREATE INDEX run_events_kind_at ON run_events (kind, at);
