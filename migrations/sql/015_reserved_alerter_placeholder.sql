-- Placeholder on branch alerter only, so that 018_alerter.sql is contiguous in
-- this branch's tests: numbers 015-017 belong to other branches. Delete this
-- file when merging (the real 015 comes from its own branch).
SELECT 1;
