"""selective_verification: calibrated verdicts with abstention, on generated scenes or passages."""
