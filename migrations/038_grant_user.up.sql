-- A grant is its approved invocation's user's: it lets through only the
-- invocations made for the same user (NULL: for none), so a session or
-- automation acting for another person, with that person's credential,
-- asks a human again. Grants made before this column are NULL and let
-- through only invocations made for no user.
ALTER TABLE grants ADD COLUMN user_id text;
