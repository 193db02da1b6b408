-- Timeline entries that a page can put in its reader's language (src/i18n/said.rs): the
-- message's key and arguments, beside the English message kept for the API and old rows.
ALTER TABLE run_events ADD COLUMN note JSONB;
