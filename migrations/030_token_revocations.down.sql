DROP TABLE token_revocation_version;
DROP TABLE token_revocations;
DROP FUNCTION outboxd_bump_revocation_version();
