-- The tree node a notification is about, so that a reader who may no longer see it (a lead
-- whose grant was revoked) no longer reads it; NULL for those about the reader's own run and
-- for notifications kept from before.
ALTER TABLE notifications ADD COLUMN node_id BIGINT REFERENCES tree_nodes (id);
