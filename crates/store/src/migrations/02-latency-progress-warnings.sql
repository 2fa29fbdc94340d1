-- Indented as the first fsbench wrote it: SQLite keeps a CREATE statement's text as given.
CREATE TABLE latency (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        op TEXT NOT NULL,
        count INTEGER NOT NULL,
        mean_ns REAL NOT NULL,
        min_ns INTEGER NOT NULL,
        p50_ns INTEGER NOT NULL,
        p90_ns INTEGER NOT NULL,
        p99_ns INTEGER NOT NULL,
        p999_ns INTEGER NOT NULL,
        max_ns INTEGER NOT NULL,
        histogram TEXT NOT NULL,
        PRIMARY KEY (run_id, idx, op)
    );
    CREATE TABLE progress (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        series TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE warnings (
        suite_id INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        config TEXT,
        workload TEXT,
        phase TEXT,
        message TEXT NOT NULL
    );
