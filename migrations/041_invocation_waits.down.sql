DROP TABLE invocation_waits;
