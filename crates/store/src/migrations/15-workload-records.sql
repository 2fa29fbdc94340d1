ALTER TABLE suites ADD COLUMN workloads TEXT;
