-- A change counter per project, beside the tree's (20261129000002_tree_version.sql): bumped by
-- every change to what the project page shows of the project's own settings and money (its
-- settings, members, budget accounts and their balances, contracts), so replicas can cache
-- those and know with the same cheap read as the tree's whether they are still current. The
-- row `project:ID` is created by the first change; a missing row reads as version 0.
-- The trigger's argument names the column holding the project's id.
CREATE FUNCTION bump_project_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    project BIGINT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        project := (to_jsonb(OLD) ->> TG_ARGV[0])::BIGINT;
    ELSE
        project := (to_jsonb(NEW) ->> TG_ARGV[0])::BIGINT;
    END IF;
    IF project IS NOT NULL THEN
        INSERT INTO change_counters (name, version) VALUES ('project:' || project, 1)
            ON CONFLICT (name) DO UPDATE SET version = change_counters.version + 1;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER projects_bump AFTER INSERT OR UPDATE OR DELETE ON projects
    FOR EACH ROW EXECUTE FUNCTION bump_project_version('node_id');
CREATE TRIGGER project_members_bump AFTER INSERT OR UPDATE OR DELETE ON project_members
    FOR EACH ROW EXECUTE FUNCTION bump_project_version('project_id');
CREATE TRIGGER contracts_bump AFTER INSERT OR UPDATE OR DELETE ON contracts
    FOR EACH ROW EXECUTE FUNCTION bump_project_version('project_id');
-- Budget accounts: opened, and every posting's balance change (global accounts have no project).
CREATE TRIGGER ledger_accounts_bump AFTER INSERT OR UPDATE OR DELETE ON ledger_accounts
    FOR EACH ROW EXECUTE FUNCTION bump_project_version('project_id');
