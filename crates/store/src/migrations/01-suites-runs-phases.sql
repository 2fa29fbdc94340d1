-- Indented as the first fsbench wrote it: SQLite keeps a CREATE statement's text as given.
CREATE TABLE suites (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        purpose TEXT NOT NULL,
        command TEXT NOT NULL,
        definition TEXT NOT NULL,
        system TEXT NOT NULL,
        target TEXT NOT NULL,
        skipped TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL,
        error TEXT,
        pid INTEGER NOT NULL,
        pid_start INTEGER NOT NULL
    );
    CREATE TABLE configurations (
        suite_id INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        label TEXT NOT NULL,
        definition TEXT NOT NULL,
        mkfs_version TEXT,
        fsck_version TEXT,
        mkfs_command TEXT,
        mount_options TEXT,
        PRIMARY KEY (suite_id, position)
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        suite_id INTEGER NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
        round INTEGER NOT NULL,
        position INTEGER NOT NULL,
        config TEXT NOT NULL,
        workload TEXT NOT NULL,
        started_at TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        source TEXT NOT NULL,
        mkfs_secs REAL,
        mount_options TEXT NOT NULL,
        unmount_secs REAL,
        fsck_clean INTEGER,
        fsck_secs REAL,
        fsck_output TEXT
    );
    CREATE INDEX runs_by_suite ON runs (suite_id);
    CREATE TABLE phases (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        name TEXT NOT NULL,
        elapsed_ns INTEGER NOT NULL,
        ops INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        cpu_user_ns INTEGER NOT NULL,
        cpu_system_ns INTEGER NOT NULL,
        caches_dropped INTEGER NOT NULL,
        sync_after_ns INTEGER,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE phase_errors (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        errno TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (run_id, idx, errno)
    );
