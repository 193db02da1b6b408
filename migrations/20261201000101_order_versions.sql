-- Delta agent syncs (docs/agent-protocol.md section 2): each placement carries the version of
-- the last change to the order it gives its agent (assigned when inserted; a stop when its run
-- begins to stop or its kill deadline moves). Versions come from one sequence and are drawn
-- only while the pass lock is held (the triggers below take it; the pass and every writer
-- that stops runs hold it already), so they are drawn in commit order: a sync that has seen
-- version V of its nodes has seen every change numbered V or lower.
CREATE SEQUENCE order_versions;
ALTER TABLE run_placements ADD COLUMN order_version BIGINT NOT NULL DEFAULT 0;
CREATE INDEX run_placements_order_version ON run_placements (node_id, order_version);

-- 8390876182486738178 = 0x7472616e63686502, the pass lock of src/runs/service.rs.
CREATE FUNCTION stamp_new_orders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(8390876182486738178);
    RETURN NULL;
END $$;
-- Once per statement, before any row takes its version from the column default below.
CREATE TRIGGER run_placements_versioned BEFORE INSERT ON run_placements
    FOR EACH STATEMENT EXECUTE FUNCTION stamp_new_orders();
ALTER TABLE run_placements ALTER COLUMN order_version SET DEFAULT nextval('order_versions');
-- Orders already given get versions 1.. (an agent's first delta sync asks for those above 0).
UPDATE run_placements SET order_version = nextval('order_versions') WHERE proc_state <> 'exited';

CREATE FUNCTION restamp_orders() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(8390876182486738178);
    UPDATE run_placements SET order_version = nextval('order_versions')
     WHERE run_id = NEW.id AND proc_state <> 'exited';
    RETURN NULL;
END $$;
-- A run leaving starting/running (its assignments become stops) or whose kill deadline moved.
CREATE TRIGGER runs_orders_changed AFTER UPDATE ON runs FOR EACH ROW
    WHEN ((OLD.state IN ('starting', 'running') AND NEW.state NOT IN ('starting', 'running'))
          OR OLD.kill_at IS DISTINCT FROM NEW.kill_at)
    EXECUTE FUNCTION restamp_orders();
