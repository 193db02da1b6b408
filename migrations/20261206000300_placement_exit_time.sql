-- When each placement's process was recorded exited, so that a gang that failed reports the
-- exit status of the process that failed first (the others were stopped by Tranche and end
-- with 143, SIGTERM), not the largest status of the gang. Set by a trigger for every writer:
-- the agents' reports, the Slurm bridge and lost nodes.
ALTER TABLE run_placements ADD COLUMN exited_at TIMESTAMPTZ;

CREATE FUNCTION stamp_placement_exit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.exited_at := clock_timestamp();
    RETURN NEW;
END $$;

CREATE TRIGGER run_placements_exit_time BEFORE UPDATE OF proc_state ON run_placements FOR EACH ROW
    WHEN (NEW.proc_state = 'exited' AND OLD.proc_state IS DISTINCT FROM 'exited')
    EXECUTE FUNCTION stamp_placement_exit();
