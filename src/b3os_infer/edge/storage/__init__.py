"""The edge's database: keys, the usage ledger and stored responses, off the event loop."""
