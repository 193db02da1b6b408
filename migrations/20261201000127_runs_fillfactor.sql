-- Room on each page of `runs` for the new versions of its rows: a pass rewrites waiting
-- reasons (1,000 rows a slice) and charges (1,000 runs a pass) far more often than runs are
-- inserted. With free space on the page and no indexed column changed, PostgreSQL keeps the
-- new version on the same page and updates none of the table's indexes (a heap-only tuple);
-- on full pages every such update also wrote an entry into each of them. Applies to pages
-- written from now on.
ALTER TABLE runs SET (fillfactor = 70);
