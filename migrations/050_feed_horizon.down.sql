-- The feeds go back to the cluster's snapshot xmin.
DROP FUNCTION feed_horizon();
