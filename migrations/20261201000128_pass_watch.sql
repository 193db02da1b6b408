-- When the leader's passes last ran, and since when they have run without a gap: agent
-- silence is counted from the later of an agent's last heartbeat and `watch_since`, so a
-- server that was down does not blame agents for the syncs it could not answer.
ALTER TABLE snapshot_cursor ADD COLUMN pass_at TIMESTAMPTZ, ADD COLUMN watch_since TIMESTAMPTZ;
