"""Who is asking: API keys (only their hashes stored), their cache and revision on the request
path, and authentication with scopes."""
