-- A rotated signing secret keeps signing, next to the new one, until
-- previous_until: a delivery's webhook-signature carries both (Standard
-- Webhooks allows several), so a receiver still verifying with the old
-- secret loses nothing while it is updated. previous_secret_sealed is
-- sealed like secret_sealed (secrets.key, bound to the endpoint id).
ALTER TABLE webhooks
    ADD COLUMN previous_secret_sealed bytea,
    ADD COLUMN previous_until timestamptz,
    ADD CONSTRAINT webhooks_previous_secret CHECK ((previous_secret_sealed IS NULL) = (previous_until IS NULL));
