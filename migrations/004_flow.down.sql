DROP TABLE flow_buckets;
