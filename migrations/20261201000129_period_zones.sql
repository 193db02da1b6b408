-- The time zones whose calendar months the budget periods follow, from `effective_from` on
-- (the first row's instant is not used). A changed TRANCHE_TIME_ZONE is recorded here to take
-- effect at the end of the current period, so no month gets a second period (and grant).
CREATE TABLE period_zones (
    effective_from TIMESTAMPTZ PRIMARY KEY,
    time_zone      TEXT NOT NULL
);
