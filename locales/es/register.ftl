# El registro de casos de uso de IA en español. Términos: docs/glossary.md.
