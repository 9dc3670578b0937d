-- Migration 5: leases on the host's boot clock (docs/sqlite-store.md, "Time rules"). A lease is
-- written with the boot it was taken on (lease_boot, the kernel's boot_id) and its end on that
-- boot's CLOCK_BOOTTIME in milliseconds (lease_host), besides its end on the wall clock
-- (lease_until): processes of the same boot compare lease_host with their own boot clock, which
-- no step of the wall clock moves. NULL (rows written before, or without a host clock) and rows of
-- another boot are read on the wall clock, as before.
ALTER TABLE idem_keys ADD COLUMN lease_boot TEXT;
ALTER TABLE idem_keys ADD COLUMN lease_host INTEGER;
