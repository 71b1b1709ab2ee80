"""The admin API under /v1/infer/admin: keys, usage and model residency, and its bodies."""
