# Páginas de operación en español: clúster, nodos, inventario, usuarios, capacidad, panel,
# avisos de GPU ociosas y registro de auditoría. Términos: docs/glossary.md.
