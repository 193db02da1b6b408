-- Ended budget periods keep the capacity and prices their entitlements were computed from
-- (docs/design.md section 2, "Entitlements of ended periods"). Before, every report of a past
-- period recomputed its entitlements from today's nodes, billing weights and prices.

-- When a node was declared, so that a period recorded after it ended counts only the nodes
-- that existed by its end. Nodes declared before this migration take the instant of their
-- `node.add` audit entry; those without one (the demo's, the benchmark's) stay NULL: unknown,
-- counted in every period.
ALTER TABLE nodes ADD COLUMN created_at TIMESTAMPTZ;
UPDATE nodes n SET created_at = a.first_at
  FROM (SELECT entity_id, min(at) AS first_at FROM audit_log
         WHERE action = 'node.add' AND entity = 'cluster_node' GROUP BY entity_id) a
 WHERE a.entity_id = n.id;
ALTER TABLE nodes ALTER COLUMN created_at SET DEFAULT now();

-- One row per ended period whose capacity was recorded (its rows below may be none: a
-- period before any node existed). Written once, by the first reader of the ended period.
CREATE TABLE period_capacity_records (
    period_start TIMESTAMPTZ PRIMARY KEY,
    period_end   TIMESTAMPTZ NOT NULL CHECK (period_end > period_start),
    recorded_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- The recorded capacity of a period: installed GPUs per cluster and GPU model, with the
-- model's billing weight (thousandths) and price per weighted GPU-hour (minor units) as they
-- were at the period's end. Names, not ids: the record stands on its own.
CREATE TABLE period_capacity (
    period_start             TIMESTAMPTZ NOT NULL REFERENCES period_capacity_records (period_start),
    cluster                  TEXT NOT NULL,
    gpu_model                TEXT NOT NULL,
    gpus                     BIGINT NOT NULL CHECK (gpus >= 0),
    billing_weight_milli     INTEGER NOT NULL CHECK (billing_weight_milli > 0),
    price_per_gpu_hour_minor BIGINT NOT NULL CHECK (price_per_gpu_hour_minor >= 0),
    PRIMARY KEY (period_start, cluster, gpu_model)
);

CREATE FUNCTION period_capacity_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the recorded capacity of an ended period is never changed or removed';
END $$;
CREATE TRIGGER period_capacity_records_no_change BEFORE UPDATE OR DELETE ON period_capacity_records
    FOR EACH ROW EXECUTE FUNCTION period_capacity_immutable();
CREATE TRIGGER period_capacity_no_change BEFORE UPDATE OR DELETE ON period_capacity
    FOR EACH ROW EXECUTE FUNCTION period_capacity_immutable();
