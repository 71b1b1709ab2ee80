"""Models pulled from the Hugging Face Hub by name: ``hf.co/OWNER/REPO[:TAG]``.

``refs`` names and chooses (pure), ``store`` keeps what is installed under the home,
``transfer`` moves bytes (resumable, hashed), ``pull`` puts them together over
``huggingface_hub``.
"""

from __future__ import annotations


class HubError(Exception):
    """A model we cannot pull or find; the one-line message says what happened and what to do."""


class Interrupted(HubError):
    """The Hub or its CDN could not be reached or answered an error mid-way: what was
    downloaded so far is kept, to resume."""
