ALTER TABLE runs ADD COLUMN config_key INTEGER;
ALTER TABLE runs ADD COLUMN workload_key INTEGER;
UPDATE runs SET config_key = (SELECT position FROM configurations c
    WHERE c.suite_id = runs.suite_id AND c.label = runs.config);
