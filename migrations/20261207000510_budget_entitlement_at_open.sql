-- The project's entitlement value a budget account was opened with (accounts of periods to
-- come follow the tree until their period begins): clearing a budget override or changing a
-- money cap mid-period regrants against it, not against today's shares, GPUs and prices,
-- which apply from the next period (docs/design.md section 7). NULL: opened before this was
-- recorded (today's value is taken, and kept, at the first change).
ALTER TABLE ledger_accounts ADD COLUMN entitlement_minor BIGINT;
