-- The count and digest of each node's running processes (docs/agent-protocol.md, "Running
-- set digest"): an agent's sync carries the same two figures for the processes it runs, and
-- while they agree the server does not need the whole list to find processes gone without an
-- exit. A process's hash is the first 60 bits of SHA-256 of `run:attempt:node` (decimal); a
-- set's digest is the sum of its members' hashes modulo 2^61 - 1, so it is the same in any
-- order and a change is a subtraction or an addition.
--
-- Kept without a lock any two writers could take in opposite orders: a trigger appends each
-- change of a placement's running state to `node_running_changes` (inserts never wait on each
-- other), the scheduling pass (one at a time) folds them into `node_running`, and a reader
-- sums both in one statement.
CREATE FUNCTION placement_hash(run_id BIGINT, attempt INT, node_id BIGINT) RETURNS BIGINT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ('x' || left(encode(sha256(convert_to(run_id || ':' || attempt || ':' || node_id, 'UTF8')), 'hex'), 15))::bit(60)::bigint
$$;

CREATE TABLE node_running (
    node_id         BIGINT PRIMARY KEY,
    running_count   BIGINT NOT NULL,
    running_digest  BIGINT NOT NULL
);

CREATE TABLE node_running_changes (
    id        BIGSERIAL PRIMARY KEY,
    node_id   BIGINT NOT NULL,
    d_count   INT NOT NULL,
    d_digest  BIGINT NOT NULL
);
CREATE INDEX node_running_changes_node ON node_running_changes (node_id);

CREATE FUNCTION note_running_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.proc_state = 'running' THEN
        INSERT INTO node_running_changes (node_id, d_count, d_digest)
        VALUES (OLD.node_id, -1, -placement_hash(OLD.run_id, OLD.attempt, OLD.node_id));
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.proc_state = 'running' THEN
        INSERT INTO node_running_changes (node_id, d_count, d_digest)
        VALUES (NEW.node_id, 1, placement_hash(NEW.run_id, NEW.attempt, NEW.node_id));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER run_placements_running_changed AFTER UPDATE ON run_placements FOR EACH ROW
    WHEN ((OLD.proc_state = 'running') IS DISTINCT FROM (NEW.proc_state = 'running')
          OR (NEW.proc_state = 'running' AND (OLD.run_id, OLD.attempt, OLD.node_id) IS DISTINCT FROM (NEW.run_id, NEW.attempt, NEW.node_id)))
    EXECUTE FUNCTION note_running_change();
CREATE TRIGGER run_placements_running_inserted AFTER INSERT ON run_placements FOR EACH ROW
    WHEN (NEW.proc_state = 'running')
    EXECUTE FUNCTION note_running_change();
CREATE TRIGGER run_placements_running_deleted AFTER DELETE ON run_placements FOR EACH ROW
    WHEN (OLD.proc_state = 'running')
    EXECUTE FUNCTION note_running_change();

INSERT INTO node_running (node_id, running_count, running_digest)
SELECT node_id, count(*), mod(sum(placement_hash(run_id, attempt, node_id)), 2305843009213693951)::BIGINT
FROM run_placements WHERE proc_state = 'running' GROUP BY node_id;
