"""information_integrity: decide allow / flag / remove for a post after checking claims and sources."""
