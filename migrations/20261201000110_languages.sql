-- The interface's languages (docs/i18n.md): each user's own choice (NULL: follow the browser,
-- else the organisation's default) and the organisation's default, which admins edit on
-- /admin/settings. One row of organisation settings, created here.
ALTER TABLE users ADD COLUMN language TEXT
    CONSTRAINT users_language_known CHECK (language IN ('en', 'es', 'eu'));

CREATE TABLE org_settings (
    id BOOLEAN PRIMARY KEY DEFAULT true CONSTRAINT org_settings_one_row CHECK (id),
    default_language TEXT NOT NULL DEFAULT 'en'
        CONSTRAINT org_settings_language_known CHECK (default_language IN ('en', 'es', 'eu'))
);
INSERT INTO org_settings DEFAULT VALUES;

-- Why a queued run waits, structured (src/i18n/wait.rs), so pages put it in the viewer's
-- language; wait_reason keeps the English words for the API.
ALTER TABLE runs ADD COLUMN wait_note JSONB;
