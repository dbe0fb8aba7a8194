"""Everyday words of French and English, to tell phrasing from a topic the journal lacks.

A query word the journal never uses says one of two things: the question is put in other words
(« je me suis enfermé dehors »: everyday words), or it is about a thing the journal never met
(« htpasswd », « trivy », « wireguard »: names no conversation uses). Only the second is evidence
that nothing in the journal is relevant. The everyday words are those of the frequency lists of
``pyspellchecker`` (MIT; French and English, counted in film subtitles: spoken language, so
technical names are rare in them), read when a search first meets a word its journal never uses
and kept in that search's index.
"""

from __future__ import annotations

from functools import cache

from ocmem.text.words import fold

LANGUAGES = ("fr", "en")
# a word counted at least this often in a language's list (tens of millions of subtitle words) is
# an everyday word of it; « déplaçant » 475, « synchroniser » 251, « postfix » 50, « htpasswd » 0
EVERYDAY_COUNT = 200


@cache
def everyday_words(languages: tuple[str, ...] = LANGUAGES) -> tuple[str, ...]:
    """The everyday words (folded) of ``languages``, each once, in order (read once per process:
    an index built in memory, on a read-only home, asks at every search of a long-running caller)."""
    # imported here: only a search meeting an unknown word reads the lists (importlib.resources
    # alone costs a search command 20 ms)
    import gzip
    import json
    from importlib import resources

    found: set[str] = set()
    for language in languages:
        data = resources.files("spellchecker").joinpath("resources").joinpath(f"{language}.json.gz")
        counts: dict[str, int] = json.loads(gzip.decompress(data.read_bytes()))
        found.update(fold(word) for word, count in counts.items() if count >= EVERYDAY_COUNT)
    return tuple(sorted(found))
