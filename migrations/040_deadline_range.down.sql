-- Nothing to undo: the deadlines 040 moved were never reached.
SELECT 1;
