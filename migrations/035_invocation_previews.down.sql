DROP TABLE invocation_previews;
