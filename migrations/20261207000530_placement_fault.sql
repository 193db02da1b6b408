-- A placement whose process never ran its command because of its node (the agent's state or
-- log directory cannot be written, no process can be started): the agent's words. Its run is
-- requeued (nothing ran) and its node drained, instead of the run failing and the node
-- failing every run sent there next.
ALTER TABLE run_placements ADD COLUMN fault TEXT CHECK (fault IS NULL OR length(fault) BETWEEN 1 AND 500);
