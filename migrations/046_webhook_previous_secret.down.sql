-- Deliveries are signed with the current secret only again.
ALTER TABLE webhooks
    DROP CONSTRAINT webhooks_previous_secret,
    DROP COLUMN previous_until,
    DROP COLUMN previous_secret_sealed;
