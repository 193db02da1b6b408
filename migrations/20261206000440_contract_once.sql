-- The one-time token of the price preview a purchase in the browser confirms: a second
-- purchase with the same token (a double click, two tabs) fails on this index and buys
-- nothing, also when the two arrive at once (the session's copy of the token cannot tell).
ALTER TABLE contracts ADD COLUMN preview_token TEXT;
CREATE UNIQUE INDEX contracts_preview_token ON contracts (preview_token) WHERE preview_token IS NOT NULL;
