# Contratos de capacidad, aprobaciones de ejecuciones protegidas y mensajes del libro mayor en
# español. Términos: docs/glossary.md.
