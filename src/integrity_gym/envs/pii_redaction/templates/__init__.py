"""Text templates and value makers behind the pii_redaction document generator."""
