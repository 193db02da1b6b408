-- Starts noted for the pass (docs/design.md section 7, "Exits noted"): a placement leaving
-- `assigned` (its process reported running, or exited, by its agent or the Slurm bridge, or
-- its node lost) leaves its run's id here in the same transaction. The pass consumes the rows
-- it can see (DELETE ... RETURNING) and marks `running` only those of its starting runs,
-- instead of checking every starting run's placements on every pass (6 ms a pass with 1,000
-- runs starting, 60 with 10,000); it still checks them all once a minute and on its first
-- pass, with the exits. A row of a transaction still open stays for a later pass.
CREATE TABLE placement_starts (
    id      BIGSERIAL PRIMARY KEY,
    run_id  BIGINT NOT NULL
);

CREATE FUNCTION note_placement_start() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO placement_starts (run_id) VALUES (NEW.run_id);
    RETURN NULL;
END $$;

CREATE TRIGGER run_placements_started AFTER UPDATE OF proc_state ON run_placements FOR EACH ROW
    WHEN (OLD.proc_state = 'assigned' AND NEW.proc_state <> 'assigned')
    EXECUTE FUNCTION note_placement_start();
