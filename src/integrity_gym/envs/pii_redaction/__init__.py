"""pii_redaction: find and label personal data in long documents through a sliding window."""
