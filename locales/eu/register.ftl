# AA erabilera-kasuen erregistroa euskaraz. Terminoak: docs/glossary.md.
