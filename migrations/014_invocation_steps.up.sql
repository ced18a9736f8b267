-- What a source did after its call to make sure of its effect, in the
-- Action API contract's terms: {"verification": {"ok", "checks"},
-- "repair": {"attempted", "ok"}, "rollback": {"attempted", "ok"}}.
-- Written by the worker when an invocation completes or fails; NULL for
-- sources without such steps (all but plugins).
ALTER TABLE action_invocations ADD COLUMN steps jsonb;
