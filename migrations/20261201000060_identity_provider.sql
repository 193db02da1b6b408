-- Sign-in through the organisation's identity provider (docs/sso.md).
--
-- External accounts: an account created by the identity provider is found again by its
-- source ('ldap' or 'oidc') and the provider's stable subject; it has no local password.
ALTER TABLE users
    ADD COLUMN external_source  TEXT CHECK (external_source IN ('ldap', 'oidc')),
    ADD COLUMN external_subject TEXT CHECK (length(external_subject) BETWEEN 1 AND 512),
    ADD CONSTRAINT users_external_both CHECK ((external_source IS NULL) = (external_subject IS NULL)),
    ADD CONSTRAINT users_external_no_password CHECK (external_source IS NULL OR password_hash IS NULL);
CREATE UNIQUE INDEX users_external ON users (external_source, external_subject)
    WHERE external_source IS NOT NULL;

-- Grants and memberships say where they come from: 'manual' (given by hand in Tranche) or
-- 'idp' (from the mapping rules, re-applied at every sign-in). A user can hold the same role
-- both ways; removing the mapped one leaves the hand-given one.
ALTER TABLE role_grants
    ADD COLUMN source TEXT NOT NULL DEFAULT 'manual' CHECK (source IN ('manual', 'idp'));
DROP INDEX role_grants_unique;
CREATE UNIQUE INDEX role_grants_unique ON role_grants (user_id, role, coalesce(node_id, 0), source);

ALTER TABLE project_members
    ADD COLUMN source TEXT NOT NULL DEFAULT 'manual' CHECK (source IN ('manual', 'idp'));
ALTER TABLE project_members DROP CONSTRAINT project_members_pkey;
ALTER TABLE project_members ADD PRIMARY KEY (project_id, user_id, source);
