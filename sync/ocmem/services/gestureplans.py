"""What the review page's gestures write: *Promouvoir* and *Refuser* for each waiting proposal a
push sends, *Annuler* for each promotion ocmem can still take back.

The page performs, ocmem decides (``ocmem.formats.gestures``): a promotion is computed here by the
code of a local promotion (``ocmem.services.promotion``: the fact line, the replaced line, the
archive entry, SKILL.md, the caps and the skill rules), against MEMORY.md, the archive and the
skills as the last pull installed them, and pushed with the pending page, in the fence at its
end. A promotion ocmem refuses (a cap, a rule) is pushed as impossible, with the reason. The
page re-checks only what it can count (the page's length against the MEMORY.md cap, the number
of skill pages) and that the pages still hold what ocmem saw; the pull checks everything again.

*Annuler* is computed by the code of a local undo (``ocmem.services.unpromotion``: the line the
promotion wrote, the replaced fact or skill from the archive, its archive entry): offered only
while the pulled pages hold exactly what the promotion wrote. The page writes the decision
« annulé », which the next pull reads (``ocmem.silverbullet.decisions``).
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
from ocmem.home.space import SyncConfig, pulled_from
from ocmem.home.workspace import Workspace
from ocmem.services import promotion, supersession, unpromotion
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
        memory_page=_page(pulled_from(config.pull, paths.rel(paths.memory_md))),
        archive_page=_page(pulled_from(config.pull, paths.rel(paths.archive_md))),
        skills_folder=pulled_from(config.pull, paths.rel(paths.skills_dir) + "/"),
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
        """The fence of the waiting proposals among ``blocks`` ((id, text) as pushed), and of
        the promoted ones that can be taken back."""
        data = []
        for _, text in blocks:
            found = pending.parse(text)
            shown = None
            if len(found) == 1 and found[0].state == pending.STATE_PENDING:
                shown = review(found[0], self.space)
            elif len(found) == 1 and found[0].state == pending.STATE_PROMOTED:
                shown = undo(found[0], self.space)
            if shown is not None:
                data.append(shown.lines(text))
        return gestures.fence(data)

    def inputs(self) -> str:
        """What the gestures are computed from, digested: unchanged, they are unchanged."""
        space = self.space
        parts = [
            space.memory,
            space.archive,
            repr((space.limits, space.memory_page, space.archive_page, space.skills_folder)),
            repr((space.decisions_page, space.home)),
            # a skill the door refuses (a link, bytes not UTF-8) states nothing, as in the review
            *(f"{name}\0{text}" for name, text in supersession.skill_texts(space.installed)),
            *sorted(str(p) for p in space.skills_dir.glob("*/*")),  # what an undo would leave
        ]
        return sha256("\0".join(parts).encode("utf-8"))


def _flat(text: str) -> str:
    return " ".join(inert.clean(text).split())


def _written(proposal: pending.Proposal, space: Space) -> pending.Proposal:
    """The proposal as its fact line and SKILL.md name it (across homes: ``vps-prod/P-0003``)."""
    if not space.home:
        return proposal
    joined = " ; ".join(proposal.sources)
    gid = f"{space.home}/{proposal.id}"
    return replace(proposal, id=gid, sources=(f"{space.home} {joined}",))


def review(proposal: pending.Proposal, space: Space) -> gestures.Review:
    pid = proposal.id
    written = _written(proposal, space)
    gid = written.id
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
        reopened=(f"- {pid} : {decisionspage.UNDONE}",),
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
                raw  # as the page compares it, without trailing blanks
                for raw in _bare(space.memory).split("\n")
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


def undo(proposal: pending.Proposal, space: Space) -> gestures.Review | None:
    """*Annuler* for a promoted proposal, or None when ocmem cannot take it back: what the
    promotion wrote was changed or is gone from the pulled pages (``ocmem pending annuler``
    says so, and the gesture by hand)."""
    pid = proposal.id
    written = _written(proposal, space)
    try:
        edits, notes = (_undo_fact if proposal.kind == "fait" else _undo_skill)(written, space)
    except (OcmemError, ValueError):
        return None
    decision = gestures.slotted(
        lambda day: decisionspage.line(pid, f"{decisionspage.UNDONE} ({day.isoformat()})")
    )
    message = f"Promotion de {written.id} annulée : {' ; '.join(notes)} ; de nouveau en attente"
    return gestures.Review(
        gid=written.id,
        title=f"{proposal.kind} · {_flat(proposal.title)}",
        decisions=space.decisions_page,
        decided=(f"- {pid} : {decisionspage.UNDONE}",),
        reopened=(f"- {pid} : {pending.STATE_PROMOTED}",),
        notes=tuple(_flat(note) for note in notes),
        gestures=(
            gestures.Gesture(
                gestures.UNDO, _flat(message + " au prochain `ocmem sync`"), decision, edits
            ),
        ),
    )


Undone = tuple[tuple[gestures.Edit, ...], list[str]]


def _bare(text: str) -> str:
    """``text``'s lines without trailing blanks, as the page compares them."""
    return "\n".join(line.rstrip(" \t\r") for line in text.split("\n"))


def _taken_out(page: str, entry: archive.Entry, archive_text: str) -> gestures.Edit:
    """The archive entry a replacement wrote, taken out of ``page`` (with the newline after it)."""
    text = _bare(entry.render())
    whole = f"\n{text}" in f"\n{_bare(archive_text)}"
    return gestures.Edit(gestures.REPLACE, page, None, old=text if whole else text.rstrip("\n"))


def _undo_fact(written: pending.Proposal, space: Space) -> Undone:
    if space.memory_page is None or space.archive_page is None:
        raise ValueError("not pulled")
    done = unpromotion.reverse_fact(space.memory, space.archive, written)
    raw = next(  # the line as the page holds it
        raw
        for raw in _bare(space.memory).split("\n")
        if raw.startswith("- ") and raw[2:].strip() == done.line
    )
    back = f"- {done.replaced.old}" if done.replaced and done.restored else None
    notes = [f"retire de {space.memory_page} « {done.line} »"]
    if back is not None:
        notes.append(f"y remet l'ancien fait « {back[2:]} »")
    edits = [gestures.Edit(gestures.REPLACE, space.memory_page, (back,) if back else None, old=raw)]
    if done.replaced is not None:
        edits.append(_taken_out(space.archive_page, done.replaced, space.archive))
        notes.append(f"retire son entrée de {space.archive_page}")
    return tuple(edits), notes


def _undo_skill(written: pending.Proposal, space: Space) -> Undone:
    if space.skills_folder is None or space.archive_page is None:
        raise ValueError("not pulled")
    name = written.skill_name or ""
    target = space.skills_dir / name / "SKILL.md"
    if target.parent.parent != space.skills_dir or not target.is_file():
        raise ValueError("no such skill")
    others = sorted(p.name for p in target.parent.iterdir() if p.name != "SKILL.md")
    done = unpromotion.reverse_skill(read_text(target), others, space.archive, written)
    page = f"{space.skills_folder}{name}/SKILL"
    # the page as the pull installed it, byte for byte (read_text would turn CRLF into LF)
    before = gestures.digest((read_bytes(target) or b"").decode("utf-8", "replace"))
    if done.replaced is None:
        return (gestures.Edit(gestures.DELETE, page, None, before=before),), [f"supprime {page}"]
    edits = (
        gestures.Edit(gestures.OVERWRITE, page, (done.target,), before=before),
        _taken_out(space.archive_page, done.replaced, space.archive),
    )
    return edits, [f"remet l'ancienne version de {page}", f"la retire de {space.archive_page}"]
