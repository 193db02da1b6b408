-- The program tree as it stood before each change of its structure or shares (a node
-- created, moved, archived, or a share changed): every row of `tree_nodes` at that instant.
-- A report of an ended budget period reads the tree as it stood at the period's end (the
-- first snapshot taken at or after it, else today's tree), so changing a share today no longer
-- rewrites last month's entitlements (found by a new-user check). Names are not kept: a
-- renamed node is shown by its name today.
CREATE TABLE tree_snapshots (
    taken_at  TIMESTAMPTZ NOT NULL,
    node_id   BIGINT NOT NULL,
    parent_id BIGINT,
    share_bp  INTEGER NOT NULL,
    archived  BOOLEAN NOT NULL,
    PRIMARY KEY (taken_at, node_id)
);

-- One snapshot per transaction, before its first change: `now()` is the transaction's start.
CREATE FUNCTION keep_tree_before_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM tree_snapshots WHERE taken_at = now()) THEN
        INSERT INTO tree_snapshots (taken_at, node_id, parent_id, share_bp, archived)
        SELECT now(), id, parent_id, share_bp, archived FROM tree_nodes;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER tree_nodes_keep_before_change
    BEFORE INSERT OR DELETE OR UPDATE OF parent_id, share_bp, archived ON tree_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION keep_tree_before_change();
