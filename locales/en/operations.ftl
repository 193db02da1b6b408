# Operations pages in English: the cluster, nodes, inventory, users, capacity, the dashboard,
# idle-GPU flags and the audit log. Domain terms: docs/glossary.md.
