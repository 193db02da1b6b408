-- Agent sessions carry the number of their registration, from this sequence, and a MAC under
-- the server's secret key (docs/agent-protocol.md section 1). A restore never takes a sequence
-- back, so a session issued after a backup outnumbers every session the restored database
-- records: a sync with it is a registration the restore forgot, not a replaced agent.
CREATE SEQUENCE agent_session_seq;
