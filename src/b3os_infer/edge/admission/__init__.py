"""Whether a request may run now: per-model queues, per-key token buckets (in memory or Redis),
their headers, and the metering that admits and settles each request."""
