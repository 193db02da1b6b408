-- Notifications that a page can put in its reader's language (src/i18n/notice.rs): what the
-- alert says, structured, beside the English message kept for the API and old rows.
ALTER TABLE notifications ADD COLUMN note JSONB;
