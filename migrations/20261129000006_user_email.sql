-- An optional e-mail address per user, for budget alerts when SMTP is configured.
ALTER TABLE users ADD COLUMN email TEXT CHECK (email IS NULL OR (length(email) <= 254 AND email ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$'));
