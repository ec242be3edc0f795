"""Secret redaction on every write path: what looks like a credential, and ``<private>...</private>`` spans, is
replaced by a marker before anything is chunked, embedded or stored.

Detection is detect-secrets' (Yelp's maintained scanner: its regex plugins for cloud keys, code-host and chat
tokens, JWTs, private keys, basic-auth URLs, keyword assignments such as ``password = "..."``), plus patterns for
what it leaves out: Anthropic keys and the newer OpenAI ones (``sk-ant-``, ``sk-proj-``), GitHub fine-grained tokens
(``github_pat_``), whole private key blocks (the plugin flags only the BEGIN line), passwords in DSNs
(``password=...`` in libpq strings), bearer tokens, Google API keys. Its entropy plugins are not used: on
coding transcripts they flag commit hashes and checksums.

Markers: ``[secret removed: <kind>]`` and ``[private]``. :func:`redact` returns the text and the counts by kind,
which the ingest summary and the hooks' log report (``secrets``). The markers are deterministic, so the same source
redacted twice hashes the same and a re-ingest of it is still "unchanged".
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from functools import lru_cache
from typing import Iterable

PRIVATE = "[private]"

_PLUGINS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector", "CloudantDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "IbmCloudIamDetector",
    "IbmCosHmacDetector", "JwtTokenDetector", "KeywordDetector", "MailchimpDetector", "NpmDetector",
    "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector", "SendGridDetector", "SlackDetector",
    "SoftlayerDetector", "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)
"""detect-secrets plugins used (every regex plugin of 1.5; not the entropy ones, nor public IP addresses)."""

_PRIVATE_SPAN = re.compile(r"<private>.*?(?:</private>|\Z)", re.I | re.S)
_KEY_BLOCK = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
                        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S)
_PATTERNS: tuple[tuple[str, re.Pattern], ...] = (
    ("Anthropic Key", re.compile(r"\bsk-ant-[a-z0-9]+-[A-Za-z0-9_\-]{20,}")),
    ("OpenAI Token", re.compile(r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}")),
    ("OpenAI Token", re.compile(r"\bsk-[A-Za-z0-9]{40,}\b")),
    ("GitHub Token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}")),
    ("GitHub Token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}")),
    ("GitLab Token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|soat|ffct|imt|agent)-[A-Za-z0-9_\-]{20,}")),
    ("Slack Token", re.compile(r"\bxox[abeoprs]-[A-Za-z0-9\-]{10,}")),
    ("Slack Token", re.compile(r"\bxapp-\d-[A-Za-z0-9\-]{10,}")),
    ("Google API Key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("AWS Access Key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("Stripe Access Key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{20,}")),
    ("JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}")),
)
"""Whole-match secrets detect-secrets misses (or matches only in some shapes)."""
_VALUE_PATTERNS: tuple[tuple[str, re.Pattern], ...] = (
    # scheme://user:password@host (the password only)
    ("Password in URL", re.compile(r"(?<=://)[^\s:/@'\"]+:([^\s@/'\"]{3,})(?=@)")),
    # libpq / ODBC key=value strings and shell assignments: password=..., PGPASSWORD=..., pwd=...
    # (no space around "=": "password = f(x)" is code, left to detect-secrets' keyword plugin and its filters)
    ("Password", re.compile(r"(?i)\b(?:pg)?(?:password|passwd|pwd)=(\"[^\"]{3,}\"|'[^']{3,}'|[^\s;,'\"()\[\]{}$]{3,})")),
    ("Bearer Token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9_\-.=~+/]{20,})")),
    # the key word then =, : or a blank (`aws configure set aws_secret_access_key ...`, YAML, INI, prose)
    ("AWS Secret Key", re.compile(r"(?i)aws_?secret_?(?:access_?)?key[\"']?(?:\s*[=:]\s*|\s+)[\"']?"
                                  r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])")),
    # 40 characters of mixed case shortly after an access key id ("AKIA... with secret wJalrXUt..."): its secret
    ("AWS Secret Key", re.compile(r"\[secret removed: AWS Access Key\][^\n]{0,80}?(?<![A-Za-z0-9/+])"
                                  r"((?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])[A-Za-z0-9/+]{40})"
                                  r"(?![A-Za-z0-9/+=])")),
)
"""Secrets that are the value of a match (group 1), its key kept so the text still reads."""
_MARKER = re.compile(r"\[secret removed: [^\]]+\]|\[private\]")


def marker(kind: str) -> str:
    return f"[secret removed: {kind}]"


@lru_cache(maxsize=1)
def _plugins():
    """detect-secrets' plugin instances, made once (importing the library costs ~0.1 s)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    by_name = {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}
    return tuple(by_name[n]() for n in _PLUGINS if n in by_name)


def _library_findings(line: str) -> Iterable[tuple[str, str]]:
    """(kind, secret value) that detect-secrets finds in one line."""
    for plugin in _plugins():
        try:
            found = plugin.analyze_line(filename="memsql-text", line=line, line_number=0, enable_eager_search=True)
        except Exception:  # a plugin's failure must not stop a write; the patterns below still apply
            continue
        for secret in found:
            value = secret.secret_value
            if value and len(value) >= 4 and not _MARKER.fullmatch(value):
                yield secret.type, value


def redact(text: str) -> tuple[str, Counter]:
    """The text with secrets and private spans replaced by markers, and how many of each kind were replaced.

    Args:
        text: any text (a transcript turn, a note, a document section).

    Returns:
        (redacted text, Counter of kind -> replacements; kind "private" for <private> spans).
    """
    counts: Counter = Counter()
    if not text:
        return text, counts

    def sub(pattern: re.Pattern, kind: str, value: str, s: str) -> str:
        out, n = pattern.subn(value, s)
        counts[kind] += n
        return out

    text = sub(_PRIVATE_SPAN, "private", PRIVATE, text)
    text = sub(_KEY_BLOCK, "Private Key", marker("Private Key"), text)
    for kind, pattern in _PATTERNS:
        text = sub(pattern, kind, marker(kind), text)
    for kind, pattern in _VALUE_PATTERNS:
        def keep_key(m: re.Match, kind=kind) -> str:
            if _MARKER.fullmatch(m.group(1)):
                return m.group(0)
            counts[kind] += 1
            start, end = m.span(1)
            return m.group(0)[: start - m.start()] + marker(kind) + m.group(0)[end - m.start():]

        text = pattern.sub(keep_key, text)
    # what detect-secrets still finds, line by line (each value replaced wherever it occurs)
    found: dict[str, str] = {}
    for line in text.splitlines():
        if len(line) > 20_000:   # a minified blob: the patterns above have run over it; the plugins' regexes
            line = line[:20_000]  # are linear, this bounds a pathological line
        for kind, value in _library_findings(line):
            found.setdefault(value, kind)
    for value in sorted(found, key=len, reverse=True):
        n = text.count(value)
        if n:
            text = text.replace(value, marker(found[value]))
            counts[found[value]] += n
    return text, +counts


def redact_document(doc):
    """A memsql.adapters.base.Document with every section's text and context, and the title, redacted.

    Returns:
        (document, Counter of kinds replaced in the sections' texts and the title); the same document object when
        nothing was found. A section's context (its neighbouring turns, memsql.adapters.base.with_neighbour_context)
        is redacted too but not counted: it repeats text counted in the section it comes from.
    """
    total: Counter = Counter()
    changed = False
    sections = []
    for s in doc.sections:
        text, n = redact(s.text)
        context, m = redact(s.context) if s.context else (s.context, Counter())
        total += n
        changed = changed or bool(n or m)
        sections.append(replace(s, text=text, context=context) if (n or m) else s)
    title, t = redact(doc.title) if doc.title else (doc.title, Counter())
    total += t
    if not (changed or t):
        return doc, total
    return replace(doc, sections=tuple(sections), title=title), total
