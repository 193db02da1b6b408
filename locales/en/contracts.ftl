# Capacity contracts, approvals of protected runs and the ledger's messages in English.
# Domain terms: docs/glossary.md.
