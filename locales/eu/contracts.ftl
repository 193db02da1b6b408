# Edukiera-kontratuak, exekuzio babestuen onarpenak eta liburu nagusiaren mezuak euskaraz.
# Terminoak: docs/glossary.md.
