"""Images, independent of the cloud: the payload container per GPU generation.

Each cloud's host images (AMIs, DLVM families) per generation are data in its
own folder (infra/<cloud>/images.py).
"""

from __future__ import annotations


def lookup(table: dict, provider: str, generation: str):
    try:
        return table[generation]
    except KeyError:
        raise KeyError(f"no {provider} image for GPU generation {generation!r}; known: {', '.join(table)}") from None


def payload_image(template: str, generation: str) -> str:
    """The payload container for this generation: `{generation}` in the configured image is replaced."""
    return template.replace("{generation}", generation)
