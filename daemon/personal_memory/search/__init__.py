"""Point-in-time search: the argument rules, the contract both paths meet, the slow
reference path that defines the ranking, and the fast in-memory path checked against it."""
