-- Schedules that predate enabled_at: their last write is the latest time they can have been enabled, so a
-- failure older than it (one already paused on and since resumed) never pauses them again.
UPDATE `cron_schedules` SET `enabled_at` = `updated_at`;
