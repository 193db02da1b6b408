-- Snapshot the tree only before a change that changes something (found by a check: a move of
-- a node to the parent it already has copied the whole tree each time): a row trigger whose
-- condition compares the old and new structure and share, instead of a statement trigger.
DROP TRIGGER tree_nodes_keep_before_change ON tree_nodes;

CREATE TRIGGER tree_nodes_keep_before_insert_or_delete
    BEFORE INSERT OR DELETE ON tree_nodes
    FOR EACH ROW EXECUTE FUNCTION keep_tree_before_change();

CREATE TRIGGER tree_nodes_keep_before_update
    BEFORE UPDATE OF parent_id, share_bp, archived ON tree_nodes
    FOR EACH ROW
    WHEN (OLD.parent_id IS DISTINCT FROM NEW.parent_id
          OR OLD.share_bp IS DISTINCT FROM NEW.share_bp
          OR OLD.archived IS DISTINCT FROM NEW.archived)
    EXECUTE FUNCTION keep_tree_before_change();

-- A row trigger's function returns the row it may change: NEW for inserts and updates, OLD
-- for deletes (NULL would skip the change).
CREATE OR REPLACE FUNCTION keep_tree_before_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM tree_snapshots WHERE taken_at = now()) THEN
        INSERT INTO tree_snapshots (taken_at, node_id, parent_id, share_bp, archived)
        SELECT now(), id, parent_id, share_bp, archived FROM tree_nodes;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END $$;
