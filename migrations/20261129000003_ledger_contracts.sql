-- Capacity contracts and the double-entry ledger. Amounts are integer minor units.
-- A posting moves `amount_minor` from one account to another, so the balances always sum to
-- zero; project budget accounts can never go below zero (a CHECK on the balance, which the
-- posting trigger updates in the same statement).

CREATE TABLE contracts (
    id            BIGSERIAL PRIMARY KEY,
    project_id    BIGINT NOT NULL REFERENCES projects (node_id),
    cluster_id    BIGINT NOT NULL REFERENCES clusters (id),
    gpu_model_id  BIGINT NOT NULL REFERENCES gpu_models (id),
    gpus          INTEGER NOT NULL CHECK (gpus > 0),
    starts_at     TIMESTAMPTZ NOT NULL,
    ends_at       TIMESTAMPTZ NOT NULL,
    -- The wall-clock zone the window was entered in, for display.
    time_zone     TEXT NOT NULL,
    price_minor   BIGINT NOT NULL CHECK (price_minor >= 0),
    state         TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'cancelled')),
    refund_minor  BIGINT CHECK (refund_minor >= 0 AND refund_minor <= price_minor),
    bought_by     BIGINT REFERENCES users (id),
    bought_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    cancelled_by  BIGINT REFERENCES users (id),
    cancelled_at  TIMESTAMPTZ,
    CHECK (ends_at > starts_at),
    CHECK ((state = 'cancelled') = (cancelled_at IS NOT NULL))
);
CREATE INDEX contracts_window ON contracts (cluster_id, gpu_model_id, starts_at, ends_at) WHERE state = 'active';
CREATE INDEX contracts_project ON contracts (project_id);

CREATE TABLE ledger_accounts (
    id            BIGSERIAL PRIMARY KEY,
    -- funding: where period budgets come from (goes negative by design);
    -- project_budget: one per project and budget period, never below zero;
    -- contract_spend, run_spend: where spending goes; lapsed: unspent budgets at period end.
    kind          TEXT NOT NULL CHECK (kind IN ('funding', 'project_budget', 'contract_spend', 'run_spend', 'lapsed')),
    project_id    BIGINT REFERENCES projects (node_id),
    period_start  TIMESTAMPTZ,
    period_end    TIMESTAMPTZ,
    balance_minor BIGINT NOT NULL DEFAULT 0,
    UNIQUE NULLS NOT DISTINCT (kind, project_id, period_start),
    CHECK ((kind = 'project_budget') = (project_id IS NOT NULL AND period_start IS NOT NULL AND period_end IS NOT NULL)),
    CONSTRAINT budget_never_negative CHECK (kind <> 'project_budget' OR balance_minor >= 0)
);
INSERT INTO ledger_accounts (kind) VALUES ('funding'), ('contract_spend'), ('run_spend'), ('lapsed');

CREATE TABLE ledger_postings (
    id            BIGSERIAL PRIMARY KEY,
    at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- grant: a period budget; lapse: unspent budget at period end; contract / refund: a
    -- capacity contract bought / cancelled; usage: allocated run time; usage_free: unallocated
    -- run time recorded at zero price; adjust: a budget change within the period.
    kind          TEXT NOT NULL CHECK (kind IN ('grant', 'lapse', 'contract', 'refund', 'usage', 'usage_free', 'adjust')),
    from_account  BIGINT NOT NULL REFERENCES ledger_accounts (id),
    to_account    BIGINT NOT NULL REFERENCES ledger_accounts (id),
    amount_minor  BIGINT NOT NULL CHECK (amount_minor >= 0),
    project_id    BIGINT NOT NULL REFERENCES projects (node_id),
    -- The budget period the posting belongs to.
    period_start  TIMESTAMPTZ NOT NULL,
    cluster_id    BIGINT REFERENCES clusters (id),
    gpu_model_id  BIGINT REFERENCES gpu_models (id),
    gpu_seconds   BIGINT NOT NULL DEFAULT 0 CHECK (gpu_seconds >= 0),
    contract_id   BIGINT REFERENCES contracts (id),
    run_id        BIGINT,
    actor_id      BIGINT REFERENCES users (id),
    note          TEXT NOT NULL DEFAULT '',
    CHECK (from_account <> to_account),
    CHECK (kind NOT IN ('contract', 'refund') OR contract_id IS NOT NULL),
    CHECK (kind NOT IN ('usage', 'usage_free') OR gpu_model_id IS NOT NULL),
    CHECK (kind <> 'usage_free' OR amount_minor = 0)
);
CREATE INDEX ledger_postings_project ON ledger_postings (project_id, period_start);
CREATE UNIQUE INDEX ledger_one_grant ON ledger_postings (project_id, period_start) WHERE kind = 'grant';

-- Balances follow postings in the same statement; postings are never changed or removed.
CREATE FUNCTION ledger_apply_posting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ledger_accounts SET balance_minor = balance_minor - NEW.amount_minor WHERE id = NEW.from_account;
    UPDATE ledger_accounts SET balance_minor = balance_minor + NEW.amount_minor WHERE id = NEW.to_account;
    RETURN NEW;
END $$;
CREATE TRIGGER ledger_postings_apply AFTER INSERT ON ledger_postings
    FOR EACH ROW EXECUTE FUNCTION ledger_apply_posting();

CREATE FUNCTION ledger_postings_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger postings are never changed or removed; post a correcting entry instead';
END $$;
CREATE TRIGGER ledger_postings_no_change BEFORE UPDATE OR DELETE ON ledger_postings
    FOR EACH ROW EXECUTE FUNCTION ledger_postings_immutable();

-- The ledger's proof: every balance equals its postings, the balances sum to zero, and no
-- project budget is below zero. Returns one row per problem (none when sound).
CREATE FUNCTION ledger_problems() RETURNS TABLE (problem TEXT) LANGUAGE sql STABLE AS $$
    SELECT format('account %s (%s) holds %s but its postings sum to %s', a.id, a.kind, a.balance_minor, coalesce(p.net, 0))
      FROM ledger_accounts a
      LEFT JOIN (
          SELECT account, sum(amount) AS net FROM (
              SELECT to_account AS account, amount_minor AS amount FROM ledger_postings
              UNION ALL
              SELECT from_account, -amount_minor FROM ledger_postings) m
          GROUP BY account) p ON p.account = a.id
     WHERE a.balance_minor <> coalesce(p.net, 0)
    UNION ALL
    SELECT format('balances sum to %s, not 0', sum(balance_minor)) FROM ledger_accounts HAVING sum(balance_minor) <> 0
    UNION ALL
    SELECT format('project budget account %s is below zero: %s', id, balance_minor)
      FROM ledger_accounts WHERE kind = 'project_budget' AND balance_minor < 0
$$;
