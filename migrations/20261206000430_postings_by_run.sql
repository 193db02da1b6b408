-- A run's page sums its charges (its usage postings): by run, not a scan of the ledger.
CREATE INDEX ledger_postings_run ON ledger_postings (run_id) WHERE run_id IS NOT NULL;
