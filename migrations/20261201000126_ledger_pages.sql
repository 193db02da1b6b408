-- A project's ledger is read a page at a time, newest first (`GET /api/v1/ledger` with
-- `before` and `limit`): this index finds a page without reading the project's other postings
-- (charging running runs every minute posts millions of rows a day at a large site).
CREATE INDEX ledger_postings_project_id ON ledger_postings (project_id, id);
