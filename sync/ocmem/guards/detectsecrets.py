"""Provider tokens recognised by Yelp's detect-secrets (Apache-2.0): its regex plugins, run on
each line, without its engine's files, baselines or online verification.

Used: every plugin the installed version registers (Discord, SendGrid, Twilio, Mailchimp,
Telegram, PyPI, Square, Artifactory, Azure storage, IBM Cloud, Cloudant, SoftLayer, OpenAI,
GitHub, GitLab, Slack, Stripe, AWS, JWT, private keys, basic auth… and those a later version
adds) except four: the keyword plugin (``ocmem.guards.credentials`` reads French and English
prose with fewer false alarms), the two entropy plugins (every digest, UUID and commit id would
be a secret) and public IPv4 addresses (infrastructure, not a secret).

Importing detect-secrets costs 120–220 ms of CPU on the 2-vCPU VM: its package loads its whole
scan engine and ``requests`` (for online verification, never used here), and no plugin can be
imported without it. So it is imported only for a line that could hold a token
(``may_hold_token``): a run of at least 20 letters, digits and ``_ - + /`` with upper and lower
case letters and a digit (or 32 characters long: a random run that long has all three but
rarely). A digest, a commit, a UUID, a cloud resource id (``vpc-0a1b2c…``), a path or a
snake_case name is none of these; a random token of 20 characters or more almost always is. An
ordinary entry has none, and its write does not pay for the import. What the plugins find
without such a run — a password in a URL, a private key's header, a Mailchimp key (lower-case
hexadecimal), a hexadecimal secret after its name — ``ocmem.guards.tokens`` and the prose rules
find on every text; a SoftLayer or Cloudant key in lower case after a name such as ``sl_key`` is
what may be left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from detect_secrets.plugins.base import BasePlugin

# The names ocmem gives the kinds detect-secrets reports (its ``secret_type``).
KINDS = {
    "AWS Access Key": "clé AWS",
    "Artifactory Credentials": "identifiants Artifactory",
    "Azure Storage Account access key": "clé de compte de stockage Azure",
    "Basic Auth Credentials": "identifiants dans une URL",
    "Cloudant Credentials": "identifiants Cloudant",
    "Discord Bot Token": "jeton de bot Discord",
    "GitHub Token": "jeton GitHub",
    "GitLab Token": "jeton GitLab",
    "IBM COS HMAC Credentials": "identifiants HMAC IBM Cloud Object Storage",
    "IBM Cloud IAM Key": "clé IAM IBM Cloud",
    "JSON Web Token": "JWT",
    "Mailchimp Access Key": "clé Mailchimp",
    "NPM tokens": "jeton npm",
    "OpenAI Token": "clé OpenAI",
    "Private Key": "clé privée",
    "PyPI Token": "jeton PyPI",
    "SendGrid API Key": "clé SendGrid",
    "Slack Token": "jeton Slack",
    "SoftLayer Credentials": "identifiants SoftLayer",
    "Square OAuth Secret": "secret OAuth Square",
    "Stripe Access Key": "clé Stripe",
    "Telegram Bot Token": "jeton de bot Telegram",
    "Twilio API Key": "clé Twilio",
}
NOT_USED = frozenset(
    {"KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector"}
)
_TOKEN_RUN = r"[A-Za-z0-9_+/-]{20,}"

_plugins: list[BasePlugin] = []


def may_hold_token(line: str) -> bool:
    """A run that could be a token (see the module's docstring)."""
    if all(len(word) < 20 for word in line.split()):  # no run, no regex to compile
        return False
    return any(map(_could_be_a_token, re.findall(_TOKEN_RUN, line)))


def _could_be_a_token(run: str) -> bool:
    upper = any(c.isupper() for c in run)
    lower = any(c.islower() for c in run)
    return upper and lower and (len(run) >= 32 or any(c.isdigit() for c in run))


def plugins() -> list[BasePlugin]:
    """An instance of every plugin used (detect-secrets is imported on the first call)."""
    if not _plugins:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

        registered: Mapping[str, type[BasePlugin]] = get_mapping_from_secret_type_to_class()
        _plugins.extend(
            plugin() for plugin in registered.values() if plugin.__name__ not in NOT_USED
        )
    return _plugins


def kind_of(secret_type: str) -> str:
    return KINDS.get(secret_type, f"secret {secret_type} (detect-secrets)")


def find_tokens(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of every token a plugin finds on a line of ``text`` that may hold one."""
    offset = 0
    for line in text.split("\n"):
        for plugin in plugins() if may_hold_token(line) else ():
            kind = kind_of(str(plugin.secret_type))
            for value in plugin.analyze_string(line):
                start = offset + line.find(value)
                if start >= offset:
                    yield start, start + len(value), kind
        offset += len(line) + 1
