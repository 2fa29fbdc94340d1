ALTER TABLE runs ADD COLUMN probe_after TEXT;
