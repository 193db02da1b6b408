-- Runs starting (waiting for their agents to confirm the processes) and stopping (waiting for
-- them to exit) are few, but every pass looks for them among all runs: at 10,000 running and
-- 50,000 queued runs the confirmation of starting runs scanned them all (13 to 37 ms a pass).
-- This index finds them directly.
CREATE INDEX runs_in_transition ON runs (state) WHERE state IN ('starting', 'stopping');
