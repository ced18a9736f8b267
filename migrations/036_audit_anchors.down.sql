DROP TABLE audit_anchors;
