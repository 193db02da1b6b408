# The AI use-case register in English. Domain terms: docs/glossary.md.
