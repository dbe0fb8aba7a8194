"""What the review page's *Promouvoir* and *Refuser* write, for each waiting proposal a push sends.

The page performs, ocmem decides (``ocmem.formats.gestures``): a promotion is computed here by the
code of a local promotion (``ocmem.services.promotion``: the fact line, the replaced line, the
archive entry, SKILL.md, the caps and the skill rules), against MEMORY.md, the archive and the
skills as the last pull installed them, and pushed with the pending page, in the fence at its
end. A promotion ocmem refuses (a cap, a rule) is pushed as impossible, with the reason. The
page re-checks only what it can count (the page's length against the MEMORY.md cap, the number
of skill pages) and that the pages still hold what ocmem saw; the pull checks everything again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from ocmem.errors import OcmemError
from ocmem.formats import archive, decisionspage, gestures, memorymd, pending, skills
from ocmem.home.atomic import read_bytes, read_text
from ocmem.home.digest import sha256
from ocmem.home.settings import Limits
from ocmem.home.space import SyncConfig
from ocmem.home.workspace import Workspace
from ocmem.services import promotion
from ocmem.text import inert

_DAY = date(2000, 1, 1)  # promotions are checked once on a fixed day: the day only fills a slot
_REASON = "\ue000raison\ue000"  # no proposal id or state holds it
MEMORY_FIX = (
    "consolide MEMORY.md dans SilverBullet (fusionne des faits, ou retire les dépassés : "
    "« ocmem: Retirer un fait ou un skill »), puis relance la promotion"
)
SKILLS_FIX = "fusionne ou retire un skill avant d'en créer un nouveau"


@dataclass(frozen=True)
class Space:
    """What a promotion is computed against: the pulled copies and the pages they come from."""

    memory: str
    archive: str
    installed: list[skills.Skill]
    skills_dir: Path
    limits: Limits
    memory_page: str | None  # SilverBullet page names, without .md (None: not pulled)
    archive_page: str | None
    skills_folder: str | None
    decisions_page: str
    home: str | None  # None: the spec's shared page, whose ids carry no home


def _remote(config: SyncConfig, local: str) -> str | None:
    for rule in config.pull:
        if rule.is_folder and local.startswith(rule.local):
            return rule.remote + local[len(rule.local) :]
        if rule.local == local:
            return rule.remote
    return None


def _page(name: str | None) -> str | None:
    return name.removesuffix(".md") if name is not None else None


def space_for(ws: Workspace, config: SyncConfig, page: str, home: str | None) -> Space:
    paths = ws.paths
    return Space(
        memory=ws.memory_text(),
        archive=ws.archive_text(),
        installed=ws.skills(),
        skills_dir=paths.skills_dir,
        limits=ws.limits,
        memory_page=_page(_remote(config, paths.rel(paths.memory_md))),
        archive_page=_page(_remote(config, paths.rel(paths.archive_md))),
        skills_folder=_remote(config, paths.rel(paths.skills_dir) + "/"),
        decisions_page=decisionspage.page_beside(page).removesuffix(".md"),
        home=home,
    )


class Decorator:
    """A pending page's gestures (``ocmem.formats.gestures.Decorate``)."""

    def __init__(self, space: Callable[[], Space]):
        self._space = space
        self._known: Space | None = None

    @property
    def space(self) -> Space:
        if self._known is None:
            self._known = self._space()
        return self._known

    def __call__(self, blocks: Sequence[tuple[str, str]]) -> str | None:
        """The fence of the waiting proposals among ``blocks`` ((id, text) as pushed)."""
        data = []
        for _, text in blocks:
            found = pending.parse(text)
            if len(found) == 1 and found[0].state == pending.STATE_PENDING:
                data.append(review(found[0], self.space).lines(text))
        return gestures.fence(data)

    def inputs(self) -> str:
        """What the gestures are computed from, digested: unchanged, they are unchanged."""
        space = self.space
        parts = [
            space.memory,
            space.archive,
            repr((space.limits, space.memory_page, space.archive_page, space.skills_folder)),
            repr((space.decisions_page, space.home)),
            *(f"{s.path}\0{read_text(s.path)}" for s in space.installed),
        ]
        return sha256("\0".join(parts).encode("utf-8"))


def _flat(text: str) -> str:
    return " ".join(inert.clean(text).split())


def review(proposal: pending.Proposal, space: Space) -> gestures.Review:
    pid = proposal.id
    gid = f"{space.home}/{pid}" if space.home else pid
    written = proposal
    if space.home:  # as the fact line and SKILL.md name it across homes
        joined = " ; ".join(proposal.sources)
        written = replace(proposal, id=gid, sources=(f"{space.home} {joined}",))
    promoted = gestures.slotted(lambda day: decisionspage.line(pid, pending.promoted_status(day)))
    refused = gestures.slotted(
        lambda day: decisionspage.line(pid, pending.refused_status(day, _REASON))
    )
    try:
        promote, notes = (_fact if proposal.kind == "fait" else _skill)(written, space, promoted)
    except ValueError as exc:  # a text the page could not be handed (a line break in a line…)
        promote, notes = _impossible(gid, OcmemError(str(exc))), []
    alert = None
    if proposal.exposure and proposal.exposure.strip():
        alert = (
            f"⚠ Exposée : {_flat(proposal.exposure)} — la session qui l'a écrite avait lu un "
            "contenu externe ; vérifie le contenu toi-même avant de promouvoir"
        )
    return gestures.Review(
        gid=gid,
        title=f"{proposal.kind} · {_flat(proposal.title)}",
        decisions=space.decisions_page,
        decided=tuple(f"- {pid} : {state}" for state in decisionspage.DECIDED),
        alert=alert,
        notes=tuple(_flat(note) for note in notes),
        gestures=(
            promote,
            gestures.Gesture(
                gestures.REFUSE,
                f"{gid} refusée",
                gestures.split_at(refused, {_REASON: gestures.REASON}),
            ),
        ),
    )


def _appended(old: str, new: str, header: str) -> tuple[str, str | None]:
    """What a page's new text adds to ``old``, as the page appends it (``gestures.APPEND``), and
    the page's start when ``old`` is blank."""
    if old.strip():
        base, empty = old.rstrip("\n") + "\n", None
    else:
        base = empty = header.rstrip("\n") + "\n"
    if not new.startswith(base):
        raise ValueError("le texte ajouté ne suit pas la page")
    return new[len(base) :], empty


def _append(
    page: str,
    old: str,
    render: Callable[[date], str],
    header: str,
    done: gestures.Text,
    max_chars: int | None = None,
    fix: str | None = None,
) -> gestures.Edit:
    text = gestures.slotted(lambda day: _appended(old, render(day), header)[0])
    empty = _appended(old, render(_DAY), header)[1]
    return gestures.Edit(
        gestures.APPEND,
        page,
        text,
        empty=(empty,) if empty else None,
        done=done,
        max_chars=max_chars,
        fix=fix,
    )


def _impossible(gid: str, exc: OcmemError) -> gestures.Gesture:
    why = f"{gid} ne peut pas être promue : {exc.message}"
    if exc.fix:
        why += f". Correction : {exc.fix}"
    return gestures.Gesture(gestures.PROMOTE, "", (), impossible=_flat(why))


def _not_pulled(gid: str, what: str) -> tuple[gestures.Gesture, list[str]]:
    exc = OcmemError(
        f"{what} n'est pas tiré de SilverBullet",
        fix="ajoute-le aux règles `pull` d'ocmem.yaml (docs/sync.md), puis `ocmem sync`",
    )
    return _impossible(gid, exc), []


def _archived(found: promotion.Promotion) -> archive.Entry:
    assert found.archived is not None
    return found.archived


Planned = tuple[gestures.Gesture, list[str]]


def _fact(written: pending.Proposal, space: Space, decision: gestures.Text) -> Planned:
    gid = written.id
    if space.memory_page is None or space.archive_page is None:
        return _not_pulled(gid, "memory/MEMORY.md ou memory/ARCHIVE.md")

    def done(day: date) -> promotion.Promotion:
        return promotion.fact(space.memory, written, day, space.limits)

    try:
        first = done(_DAY)
    except OcmemError as exc:
        return _impossible(gid, exc), []
    edits: list[gestures.Edit] = []
    if first.archived is not None:
        edits.append(
            _append(
                space.archive_page,
                space.archive,
                lambda day: archive.with_entry(space.archive, _archived(done(day))),
                archive.ARCHIVE_HEADER,
                done=gestures.slotted(lambda day: _archived(done(day)).render().split("\n")[0]),
            )
        )
    if first.line is not None:
        line = gestures.slotted(lambda day: f"- {done(day).line}")
        if first.archived is not None:
            old = next(
                raw
                for raw in space.memory.split("\n")
                if raw.startswith("- ") and raw[2:].strip() == first.archived.old
            )
            edit = gestures.Edit(
                gestures.REPLACE,
                space.memory_page,
                line,
                old=old,
                done=line,
                max_chars=space.limits.memory_chars,
                fix=MEMORY_FIX,
            )
        else:
            edit = _append(
                space.memory_page,
                space.memory,
                lambda day: done(day).text,
                memorymd.MEMORY_HEADER,
                done=line,
                max_chars=space.limits.memory_chars,
                fix=MEMORY_FIX,
            )
        edits.append(edit)
    message = _flat(f"{gid} promue : " + " ; ".join(first.notes))
    return gestures.Gesture(gestures.PROMOTE, message, decision, tuple(edits)), first.notes


def _skill(written: pending.Proposal, space: Space, decision: gestures.Text) -> Planned:
    gid = written.id
    if space.skills_folder is None or space.archive_page is None:
        return _not_pulled(gid, "skills/ ou memory/ARCHIVE.md")

    def done(day: date) -> promotion.Promotion:
        return promotion.skill(space.skills_dir, space.installed, written, day, space.limits)[1]

    try:
        target, first = promotion.skill(
            space.skills_dir, space.installed, written, _DAY, space.limits
        )
    except OcmemError as exc:
        return _impossible(gid, exc), []
    page = f"{space.skills_folder}{target.parent.name}/{target.stem}"
    edits: list[gestures.Edit] = []
    if first.archived is not None:
        reason = next(
            line for line in first.archived.render().split("\n") if line.startswith("- Raison : ")
        )
        edits.append(
            _append(
                space.archive_page,
                space.archive,
                lambda day: archive.with_entry(space.archive, _archived(done(day))),
                archive.ARCHIVE_HEADER,
                done=(reason,),
            )
        )
    text = gestures.slotted(lambda day: done(day).text)
    if target.exists():
        # the page as the pull installed it, byte for byte (read_text would turn CRLF into LF)
        before = gestures.digest((read_bytes(target) or b"").decode("utf-8", "replace"))
        edits.append(gestures.Edit(gestures.OVERWRITE, page, text, before=before))
    else:
        edits.append(
            gestures.Edit(
                gestures.CREATE,
                page,
                text,
                max_pages=(space.limits.skills_max, space.skills_folder),
                fix=SKILLS_FIX,
            )
        )
    message = _flat(f"{gid} promue : {page} ; " + " ; ".join(first.notes))
    return gestures.Gesture(gestures.PROMOTE, message, decision, tuple(edits)), first.notes
