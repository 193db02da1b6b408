-- A placement's exit instant may be given by its writer: an agent reports how long ago a
-- process ended, so a run whose process ended while the server was down ends and is charged
-- at that instant, not when the server came back. The trigger stamps the time of the write
-- only when the writer gave none.
CREATE OR REPLACE FUNCTION stamp_placement_exit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.exited_at IS NULL OR NEW.exited_at IS NOT DISTINCT FROM OLD.exited_at
       OR NEW.exited_at > clock_timestamp() THEN
        NEW.exited_at := clock_timestamp();
    END IF;
    RETURN NEW;
END $$;
