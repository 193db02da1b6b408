-- Which agent serves a node, as it describes itself at registration (host and pid), and since
-- when: shown on the admin cluster page next to the last heartbeat.
ALTER TABLE nodes
    ADD COLUMN agent_label TEXT CHECK (length(agent_label) <= 200),
    ADD COLUMN agent_registered_at TIMESTAMPTZ;

-- A lost node (its agent stopped or fell silent: no session, but it had one) does not count
-- towards entitlements or contractable capacity, so the tree cache must move when a node is
-- lost or comes back. Only that transition bumps it; heartbeats still do not.
CREATE TRIGGER nodes_liveness_bump AFTER UPDATE OF agent_session ON nodes
    FOR EACH ROW WHEN ((OLD.agent_session IS NULL) IS DISTINCT FROM (NEW.agent_session IS NULL))
    EXECUTE FUNCTION bump_tree_version();
