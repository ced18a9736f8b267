ALTER TABLE grants DROP COLUMN user_id;
