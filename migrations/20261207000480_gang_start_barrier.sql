-- A gang's processes start together: a placement of a run on several nodes is held (not yet an
-- order to its agent) while any GPU of any of the run's placements is still used by another
-- run's live process (a preempted or cancelled run in its grace period). The pass releases a
-- gang's placements together, each with a new order version, once all its GPUs are free
-- (docs/agent-protocol.md section 2; docs/design.md section 10).
ALTER TABLE run_placements ADD COLUMN held BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX run_placements_held ON run_placements (run_id) WHERE held;
