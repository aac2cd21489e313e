"""The environments, one folder each with the same file names."""
