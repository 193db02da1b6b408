-- Balances follow their postings once per statement instead of once per posting
-- (docs/design.md section 7, "Time limits and charges from memory"): a pass charging 1,000
-- runs writes 1,000 postings in one insert, which updated the shared spend account and the
-- budget accounts 2,000 times; now each account touched is updated once, by the net of the
-- statement's postings. Postings are never changed or removed (ledger_postings_no_change), so
-- inserts are all there is to follow; the CHECK on project budgets applies to the account's
-- balance after the statement, which is what a reader of the committed ledger sees either way.
CREATE FUNCTION ledger_apply_postings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ledger_accounts a SET balance_minor = a.balance_minor + d.net
      FROM (SELECT account, sum(amount)::BIGINT AS net FROM (
                SELECT to_account AS account, amount_minor AS amount FROM new_postings
                UNION ALL
                SELECT from_account, -amount_minor FROM new_postings) m
            GROUP BY account) d
     WHERE a.id = d.account AND d.net <> 0;
    RETURN NULL;
END $$;

DROP TRIGGER ledger_postings_apply ON ledger_postings;
DROP FUNCTION ledger_apply_posting();
CREATE TRIGGER ledger_postings_apply AFTER INSERT ON ledger_postings REFERENCING NEW TABLE AS new_postings
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_apply_postings();
