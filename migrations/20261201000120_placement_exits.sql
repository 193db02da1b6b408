-- Exits noted for the pass (docs/design.md section 7, "Exits noted"): a placement reported
-- exited (by its agent, the Slurm bridge, or a lost node) leaves its run's id here in the same
-- transaction. The pass consumes the rows it can see (DELETE ... RETURNING) and looks for ended
-- attempts and failed gang members among those runs only, instead of joining every starting
-- or running run with its placements on every pass; it still sweeps them all once a minute
-- and on its first pass. A row of a transaction still open stays for a later pass.
CREATE TABLE placement_exits (
    id      BIGSERIAL PRIMARY KEY,
    run_id  BIGINT NOT NULL
);

CREATE FUNCTION note_placement_exit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO placement_exits (run_id) VALUES (NEW.run_id);
    RETURN NULL;
END $$;

CREATE TRIGGER run_placements_exited AFTER UPDATE OF proc_state ON run_placements FOR EACH ROW
    WHEN (NEW.proc_state = 'exited' AND OLD.proc_state IS DISTINCT FROM 'exited')
    EXECUTE FUNCTION note_placement_exit();
