-- A placement whose live agent, told to stop it, never started its process (the run was
-- cancelled or preempted between its start decision and the agent's next sync): its run's
-- end then says its processes were never seen to start, not that its agent was lost.
ALTER TABLE run_placements ADD COLUMN never_started BOOLEAN NOT NULL DEFAULT false;
