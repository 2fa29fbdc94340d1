ALTER TABLE runs ADD COLUMN preparation TEXT;
