"""Who may read the memory over HTTP: the owner's passphrase, registered clients, grants
and their tokens (see ``store``)."""
