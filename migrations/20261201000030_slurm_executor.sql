-- Executors (docs/design.md section 9, docs/slurm.md): a cluster is served by Tranche's node
-- agent or by a Slurm cluster's controller, through the Slurm bridge inside `tranche serve`.
ALTER TABLE clusters
    ADD COLUMN executor TEXT NOT NULL DEFAULT 'agent' CHECK (executor IN ('agent', 'slurm')),
    -- The Slurm partition whose nodes make the cluster (slurm only).
    ADD COLUMN slurm_partition TEXT CHECK (slurm_partition ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'),
    -- Since when the executor does not answer (NULL while it does), and its last error in words.
    ADD COLUMN executor_down_since TIMESTAMPTZ,
    ADD COLUMN executor_error TEXT CHECK (length(executor_error) <= 2000),
    ADD CONSTRAINT clusters_slurm_partition CHECK ((executor = 'slurm') = (slurm_partition IS NOT NULL));

-- GPUs that Slurm jobs submitted outside Tranche hold on a node (followed by the bridge), and
-- the node's state as Slurm gives it, for the cluster page.
ALTER TABLE nodes
    ADD COLUMN outside_gpus INTEGER NOT NULL DEFAULT 0 CHECK (outside_gpus >= 0),
    ADD COLUMN executor_state TEXT CHECK (length(executor_state) <= 200);

-- One Slurm job per attempt of a run on a Slurm cluster. The job's name carries the run and the
-- attempt (tranche-RUN-ATTEMPT), so after a lost answer the bridge finds the job it submitted
-- instead of submitting again.
CREATE TABLE slurm_jobs (
    run_id       BIGINT NOT NULL REFERENCES runs (id),
    attempt      INTEGER NOT NULL,
    cluster_id   BIGINT NOT NULL REFERENCES clusters (id),
    job_id       BIGINT NOT NULL,
    submitted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Slurm's job state as last seen (PENDING, RUNNING, COMPLETED, ...).
    state        TEXT NOT NULL DEFAULT 'PENDING',
    -- When SIGTERM was sent for a stop, and when the job was cancelled.
    signalled_at TIMESTAMPTZ,
    cancelled_at TIMESTAMPTZ,
    PRIMARY KEY (run_id, attempt),
    UNIQUE (cluster_id, job_id)
);

-- The GPU indices Slurm gave the job on a node (its CUDA_VISIBLE_DEVICES), shown on the run
-- page; Tranche's own indices (gpu_indices) only count GPUs on Slurm clusters.
ALTER TABLE run_placements ADD COLUMN executor_gpus INTEGER[];

-- Slurm jobs outside Tranche that hold GPUs, as last seen: the cluster page and waiting reasons.
CREATE TABLE slurm_outside_jobs (
    cluster_id BIGINT NOT NULL REFERENCES clusters (id),
    job_id     BIGINT NOT NULL,
    node_id    BIGINT NOT NULL REFERENCES nodes (id),
    gpus       INTEGER NOT NULL CHECK (gpus > 0),
    name       TEXT NOT NULL,
    user_name  TEXT NOT NULL,
    seen_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, job_id, node_id)
);

-- Capacity contracts mirrored as Slurm reservations: the reservation's name while it exists.
ALTER TABLE contracts ADD COLUMN slurm_reservation TEXT;
