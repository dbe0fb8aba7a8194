"""Session taint (issue 12): which tool calls bring outside content into a session, and how the
memory writes of an exposed session are marked.

ocmem decides by *where the session has been*, never by what the text looks like. A root
session becomes exposed as soon as a call brings content that neither the user nor the project
wrote; the exposure is kept with its source in the session's record (``ocmem.home.sessions``) and
never expires within the session. The rules (docs/security.md, "Session taint"):

- any tool that is neither one of OpenCode's own nor a memory tool: ``webfetch``,
  ``websearch``, every MCP tool (``untrusted_tool``);
- a shell command that fetches or may fetch: a network client (curl, wget, ssh, nc…), a git or
  package-manager subcommand that talks to a remote, an inline interpreter (``python -c``,
  ``node -e``, ``python - <<EOF``…), a URL, ``/dev/tcp`` (``shell_fetch``);
- a read (``read``, ``grep``, ``glob``, ``list``, or a path named in a shell command) of a file
  outside the project and ocmem's home (``outside_read``); a system device or program path
  (``/dev/null``, ``/usr/bin/…``) is not content;
- inside the project or the home, a third-party folder (``node_modules``, ``vendor``, ``.git``…:
  ``third_party``), a file changed while an exposed session was running (its ctime inside that
  session's window: ``tainted_file``, which closes laundering through a file), a memory file that
  holds quarantined items (``quarantined_memory``), or any project file when ``ocmem.yaml`` says
  ``plugin: {trust_project: false}`` (``project_read``);
- a memory call that did not come through the plugin's gate (``direct_call``, ocmem.home.sessions);
- a page of the human's SilverBullet space that is not validated memory, a listing or a search
  of the space, through the plugin's space tools (``space_content``: decided by ocmem when it
  answers, ``ocmem.bridge.spaceanswers``).

Project files are otherwise the user's: ocmem cannot tell a file the user wrote from one they
downloaded outside OpenCode, and treating every project read as exposure would quarantine almost
every session's memory.

The plugin applies these rules in its ``tool.execute.before`` hook, in microseconds, from the
regular expressions and lists below, which ``ocmem plugin-config`` sends it
(``ocmem.bridge.contract.PluginSettings``). Every expression is written once here, in the syntax that
Python and JavaScript read alike (``tests/test_exposure.py`` checks both agree).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ocmem.formats import marks

UNTRUSTED_TOOL = "untrusted_tool"
SHELL_FETCH = "shell_fetch"
OUTSIDE_READ = "outside_read"
THIRD_PARTY = "third_party"
TAINTED_FILE = "tainted_file"
QUARANTINED_MEMORY = "quarantined_memory"
PROJECT_READ = "project_read"
DIRECT_CALL = "direct_call"
SPACE_CONTENT = "space_content"
UNTRUSTED_OUTPUT = "untrusted_output"  # written by ocmem before issue 12: web or MCP output

# How each kind reads in a memory file (French: the human reads it).
KIND_LABELS = {
    UNTRUSTED_TOOL: "outil externe",
    SHELL_FETCH: "commande réseau",
    OUTSIDE_READ: "lecture hors du projet",
    THIRD_PARTY: "fichier tiers",
    TAINTED_FILE: "fichier modifié pendant une session exposée",
    QUARANTINED_MEMORY: "mémoire en quarantaine",
    PROJECT_READ: "fichier d'un projet non fiable",
    DIRECT_CALL: "appel direct hors du plugin",
    SPACE_CONTENT: "contenu de SilverBullet hors de la mémoire validée",
    UNTRUSTED_OUTPUT: "sortie d'outil externe",
}

# Whitespace and word characters spelled out: Python and JavaScript read them alike.
_SP = r"[ \t\n\r\f\v]"
_TOKEN = r"[^ \t\n\r\f\v]"
_WORD_START = r"(?:^|[ \t\n\r\f\v;&|()`'\"=/])"
_WORD_END = r"(?=$|[ \t\n\r\f\v;&|()`'\"])"
_NETWORK_PROGRAMS = (
    "curl|wget|wget2|aria2c|axel|lynx|links|elinks|w3m|httpie|xh|nc|ncat|netcat|socat|telnet|"
    "ssh|scp|sftp|ftp|tftp|rsync|svn|hg|gh|hub|dig|nslookup|whois|npx|bunx|uvx|pipx|composer|"
    "ollama"
)
_OPTIONS = rf"(?:{_SP}+-[A-Za-z0-9_-]+(?:={_TOKEN}+)?)*"
_REMOTE_SUBCOMMANDS = (
    rf"git(?:{_SP}+-[Cc]{_SP}+{_TOKEN}+|{_SP}+--?[A-Za-z0-9_-]+(?:={_TOKEN}+)?)*{_SP}+"
    r"(?:clone|fetch|pull|ls-remote|submodule|remote|archive|send-email|svn)|"
    rf"(?:npm|pnpm|yarn|bun){_OPTIONS}{_SP}+(?:install|i|add|ci|view|info|show|x|dlx|create|"
    r"init|exec|update|upgrade|outdated|audit|search)|"
    rf"(?:pip[0-9.]*|python[0-9.]*{_SP}+-m{_SP}+pip){_OPTIONS}{_SP}+"
    r"(?:install|download|index|search)|"
    rf"uv{_OPTIONS}{_SP}+(?:pip|add|sync|run|tool|lock)|"
    rf"cargo{_OPTIONS}{_SP}+(?:install|add|search|update|fetch|build|run)|"
    rf"go{_SP}+(?:get|install|mod{_SP}+download|run)|"
    r"(?:apt|apt-get|dnf|yum|apk|pacman|zypper|brew|snap|flatpak|gem|conda|mamba)"
    rf"{_OPTIONS}{_SP}+(?:install|download|source|changelog|info|fetch|search|update|add|-S[A-Za-z]*)|"
    rf"(?:docker|podman|buildah|nerdctl){_OPTIONS}{_SP}+(?:pull|run|build|search|compose|login)|"
    rf"openssl{_SP}+s_client"
)
_INTERPRETERS = (
    r"(?:python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl|ruby|php|lua[0-9.]*|Rscript|"
    r"osascript|pwsh|powershell|tclsh)"
)
# A command that fetches, or runs inline code that may fetch, or names a remote location.
FETCH_COMMAND_SOURCE = (
    f"{_WORD_START}(?:(?:{_NETWORK_PROGRAMS}){_WORD_END}"
    f"|(?:{_REMOTE_SUBCOMMANDS}){_WORD_END}"
    f"|{_INTERPRETERS}{_OPTIONS}{_SP}+(?:-[A-Za-z]*[ceE]|-r|-p|-|eval|--eval|--print|-command)"
    f"{_WORD_END}"
    f"|{_INTERPRETERS}{_OPTIONS}{_SP}*<<)"
    r"|(?:https?|ftps?|sftp|ssh|git|rsync|s3|gs|wss?)://|/dev/(?:tcp|udp)/"
)

_PATH_CHAR = r"[^ \t\n\r\f\v'\"|;&<>()`$:]"
# Paths a shell command names: absolute, from the user's home (~, $HOME) or going up (..). Not
# the "//host/…" of a URL (the URL itself is a fetch).
PATH_TOKEN_SOURCE = (
    rf"(?:^|[ \t\n\r\f\v'\"=:<>|;&(])((?:~|\$HOME|\$\{{HOME\}})?/(?!/){_PATH_CHAR}*|"
    rf"\.\.(?:/{_PATH_CHAR}*)?(?=$|[ \t\n\r\f\v'\"|;&<>()]))"
)
# Relative names of files a shell command may read (a dot or a slash inside), checked against
# the windows of exposed sessions only (``tainted_file``).
FILE_TOKEN_SOURCE = (
    r"(?:^|[ \t\n\r\f\v'\"=<>|;&(])"
    r"([A-Za-z0-9_@+-][^ \t\n\r\f\v'\"|;&<>()`$=:]*[./][^ \t\n\r\f\v'\"|;&<>()`$=:]*)"
)

# Folders of third-party content inside a project (or the home): any path with such a component.
UNTRUSTED_DIRS = (
    "node_modules",
    "vendor",
    "third_party",
    "third-party",
    "bower_components",
    "site-packages",
    "dist-packages",
    "__pypackages__",
    ".git",
    ".venv",
    "venv",
    ".tox",
    ".cargo",
    ".gradle",
    ".m2",
    "Pods",
    ".terraform",
)
# Outside the project: paths that are programs or devices, not content a model reads.
SYSTEM_PATHS = (
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/fd/",
    "/bin/",
    "/sbin/",
    "/usr/bin/",
    "/usr/sbin/",
    "/usr/local/bin/",
)


def fetches(command: str) -> bool:
    """Whether a shell command brings outside content (the plugin applies the same source)."""
    return re.search(FETCH_COMMAND_SOURCE, command) is not None


def named_paths(command: str) -> list[str]:
    """The absolute, home-relative and upward paths a shell command names, as written."""
    return [m.group(1) for m in re.finditer(PATH_TOKEN_SOURCE, command)]


def named_files(command: str) -> list[str]:
    """Relative file names a shell command names (a dot or a slash inside)."""
    return [m.group(1) for m in re.finditer(FILE_TOKEN_SOURCE, command)]


# --- what an exposed write carries (the marks: ocmem.formats.marks) ---------------------------

SOURCE_CHARS = 120


@dataclass(frozen=True)
class Taint:
    """What a memory write of an exposed session carries: the session's exposure (``source``,
    already cleaned) and whether the user asked, in the current turn, for this write to be kept
    (« retiens ça »: the write is kept out of quarantine, and says so)."""

    source: str
    user_asked: bool = False

    @property
    def state(self) -> str:
        return marks.USER_ASKED if self.user_asked else marks.QUARANTINE

    @property
    def quarantined(self) -> bool:
        return not self.user_asked

    def mark(self) -> str:
        return marks.mark(self.state, self.source)


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_QUERY = re.compile(r"([a-z][a-z0-9+.-]*://[^\s?#]*)[?#]\S*", re.IGNORECASE)
_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)[^\s/@]+@", re.IGNORECASE)


def clean_source(source: str, known_secrets: Iterable[str] = ()) -> str:
    """One exposure source as memory files may keep it: one line, no brackets, URLs without
    their query and credentials, at most ``SOURCE_CHARS`` characters (a long one keeps its start
    and its end); masked whole when it still carries a secret or personal data (a source can
    reach SilverBullet in a proposal)."""
    from ocmem.guards.personal import find_personal_data
    from ocmem.guards.textsafety import find_secrets
    from ocmem.text.inert import clean

    text = clean(_CONTROL.sub(" ", source)).replace("[", "(").replace("]", ")").replace("·", "-")
    text = _USERINFO.sub(r"\1", _QUERY.sub(r"\1", text))
    text = " ".join(text.split())
    if len(text) > SOURCE_CHARS:
        # The middle goes: the start names the tool, the end the file or page it read.
        head = SOURCE_CHARS // 3
        text = text[:head].rstrip() + "…" + text[len(text) - (SOURCE_CHARS - head - 1) :].lstrip()
    if find_secrets(text, known_secrets) or find_personal_data(text):
        return "(source masquée : elle contenait un secret ou une donnée personnelle)"
    return text or "(source inconnue)"


def describe(kind: str, source: str) -> str:
    """An exposure as a person reads it: the tool or command it came from, else its kind."""
    return source or KIND_LABELS.get(kind, kind)
