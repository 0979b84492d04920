"""Running the daemon as a service: systemd units and launchd agents."""
