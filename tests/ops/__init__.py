"""The OpInfo-driven op suite (a package so `op_table` cannot clash with other test folders)."""
