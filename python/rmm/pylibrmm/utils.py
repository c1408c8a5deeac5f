"""Utility functions (RMM's ``rmm.pylibrmm.utils``)."""

from rmm.pylibrmm.stream import Stream


def as_stream(stream: Stream) -> Stream:
    """Return ``stream`` as a :class:`Stream`; ``None`` is a ``TypeError``."""
    if stream is None:
        raise TypeError(
            "stream argument cannot be None. Please provide a valid Stream instance."
        )
    return stream


__all__ = ["as_stream"]
