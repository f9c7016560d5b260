"""The tags that mark session records, shared by the hooks' session records
(gitmem.agents.session), SessionStart's context block and `gitmem sessions` / `gitmem log`
(gitmem.coord.sessions). Standard library only: the hook path imports it."""

__all__ = ["ACTION_PREFIX", "DEVICE_PREFIX", "LOG_TAG", "SESSION_TAG"]

SESSION_TAG = "session"  # every session record: the hooks' and `gitmem log`'s
LOG_TAG = "log"  # a `gitmem log` entry
ACTION_PREFIX = "action:"  # its action, as a tag
DEVICE_PREFIX = "device:"  # the device it was written on, as a tag
