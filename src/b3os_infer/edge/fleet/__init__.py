"""An edge with nodes behind it: what they say to each other, which node a request goes to (its
session's), the forwarding and the node's front door."""
