-- When each placement's process was recorded started (its first report after the assignment,
-- `running`, or `exited` at once), so that a run's attempt counts from its processes' start:
-- a run placed on GPUs whose previous run is still in its grace period waits for it, and that
-- wait is neither charged nor taken from its time limit or minimum runtime. Set by a trigger
-- for every writer (the agents' reports, the Slurm bridge, lost nodes).
ALTER TABLE run_placements ADD COLUMN running_at TIMESTAMPTZ;

CREATE FUNCTION stamp_placement_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.running_at := clock_timestamp();
    RETURN NEW;
END $$;

CREATE TRIGGER run_placements_run_time BEFORE UPDATE OF proc_state ON run_placements FOR EACH ROW
    WHEN (OLD.proc_state = 'assigned' AND NEW.proc_state IS DISTINCT FROM 'assigned')
    EXECUTE FUNCTION stamp_placement_run();
