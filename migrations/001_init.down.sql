DROP TABLE invoke_rate_windows;
DROP TABLE credentials;
DROP TABLE action_modes;
DROP TABLE action_invocations;
