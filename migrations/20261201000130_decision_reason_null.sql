-- An approval without a note has no decision reason (the API answered "").
UPDATE runs SET decision_reason = NULL WHERE decision_reason = '';
