"""The Messages API's wire models: requests (``params``, ``content``, ``tools``) decoded by
validating them, responses and stream events (``responses``) serialised once, and the
kinds of their tagged unions (``kinds``)."""
