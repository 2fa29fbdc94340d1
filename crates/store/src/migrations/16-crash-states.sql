ALTER TABLE configurations ADD COLUMN crash TEXT;
