"""The words of French and English, to tell a question's wording from a name the journal lacks.

A query word the journal never uses says one of two things: the question is put in other words
(« une rustine poussée à distance » for a hotfix: words of the language), or it is about a thing
the journal never met (« Kubernetes », « htpasswd », « WireGuard »: names no dictionary holds).
Only the second is evidence that nothing in the journal is relevant. The dictionary is the union
of ``pyspellchecker``'s French and English word lists (MIT; words counted in film subtitles:
spoken language, so technical names are absent from them), folded; a search reads it the first
time it meets a word its journal never uses, and keeps it in its index.
"""

from __future__ import annotations

from functools import cache

from ocmem.text.words import fold

LANGUAGES = ("fr", "en")


@cache
def dictionary_words(languages: tuple[str, ...] = LANGUAGES) -> tuple[str, ...]:
    """Every word (folded) of ``languages``, each once, in order (read once per process: an
    index built in memory, on a read-only home, asks at every search of a long-running caller)."""
    # imported here: only a search meeting an unknown word reads the lists (importlib.resources
    # alone costs a search command 20 ms)
    import gzip
    import json
    from importlib import resources

    found: set[str] = set()
    for language in languages:
        data = resources.files("spellchecker").joinpath("resources").joinpath(f"{language}.json.gz")
        counts: dict[str, int] = json.loads(gzip.decompress(data.read_bytes()))
        found.update(fold(word) for word in counts)
    return tuple(sorted(found))
