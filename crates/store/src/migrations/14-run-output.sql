-- Indented as the first fsbench wrote it: SQLite keeps a CREATE statement's text as given.
CREATE TABLE run_output (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        step TEXT NOT NULL,
        stdout TEXT NOT NULL,
        stderr TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
    );
