-- The placements whose processes have not been reported started, by node: what a sync's
-- check for processes that will never start reads (`runs::agents::sync`), so that it costs
-- what is starting on the agent's nodes, not what runs there (docs/agent-protocol.md,
-- "Running-set digest").
CREATE INDEX run_placements_assigned ON run_placements (node_id) WHERE proc_state = 'assigned';
