-- A counter bumped by every change to the data the program tree page is computed from
-- (tree nodes, inventory, GPU models), so replicas can cache the computed tree and know
-- with one cheap read whether it is still current.
CREATE TABLE change_counters (
    name    TEXT PRIMARY KEY,
    version BIGINT NOT NULL DEFAULT 0
);
INSERT INTO change_counters (name) VALUES ('tree');

CREATE FUNCTION bump_tree_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE change_counters SET version = version + 1 WHERE name = 'tree';
    RETURN NULL;
END $$;

CREATE TRIGGER tree_nodes_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tree_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION bump_tree_version();
CREATE TRIGGER nodes_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON nodes
    FOR EACH STATEMENT EXECUTE FUNCTION bump_tree_version();
CREATE TRIGGER gpu_models_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON gpu_models
    FOR EACH STATEMENT EXECUTE FUNCTION bump_tree_version();
CREATE TRIGGER clusters_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON clusters
    FOR EACH STATEMENT EXECUTE FUNCTION bump_tree_version();
