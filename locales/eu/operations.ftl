# Eragiketa-orriak euskaraz: klusterra, nodoak, inbentarioa, erabiltzaileak, edukiera, panela,
# GPU geldien abisuak eta auditoria-erregistroa. Terminoak: docs/glossary.md.
