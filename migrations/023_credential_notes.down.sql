ALTER TABLE credentials DROP COLUMN note;
