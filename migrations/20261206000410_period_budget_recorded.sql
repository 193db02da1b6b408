-- The period budget in effect for each project budget account, as set when the period was
-- opened (the grant) and by every later change of the project's budget or money cap. The
-- postings cannot say it once a budget was cut below what was already spent (the adjustment
-- never takes the balance below zero), and today's entitlement is not the budget of a period
-- opened earlier: pages, the API, spend reports and alerts read it from here.
ALTER TABLE ledger_accounts ADD COLUMN budget_minor BIGINT;
UPDATE ledger_accounts a SET budget_minor = coalesce((
    SELECT sum(CASE WHEN p.to_account = a.id THEN p.amount_minor ELSE -p.amount_minor END)
    FROM ledger_postings p
    WHERE p.kind IN ('grant', 'adjust') AND (p.to_account = a.id OR p.from_account = a.id)), 0)
WHERE a.kind = 'project_budget';
ALTER TABLE ledger_accounts ADD CONSTRAINT budget_recorded
    CHECK ((kind = 'project_budget') = (budget_minor IS NOT NULL));
