"""``ocmem status``: the fill of each capped file, the journal, proposals, skills, sync state."""

from __future__ import annotations

import os

from ocmem.formats import journal, pending, shortterm
from ocmem.formats.fill import Fill
from ocmem.home.atomic import read_bytes, read_text
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import presence


def _warning(fill: Fill, warn_at: float) -> str:
    if fill.over:
        return " ⚠ au-dessus du plafond"
    return " ⚠ bientôt plein" if fill.warns(warn_at) else ""


def status(ws: Workspace) -> Outcome:
    paths, limits = ws.paths, ws.limits
    warn_at = limits.fill_warning_ratio
    lines = []
    memory_fill = Fill(len(ws.memory_text()), limits.memory_chars)
    lines.append(f"MEMORY.md       {memory_fill}{_warning(memory_fill, warn_at)}")
    held = shortterm.hold(read_text(paths.short_term), read_text(paths.note_quarantine), ws.today())
    st_fill = Fill(len(shortterm.render(held.working)), limits.short_term_chars)
    expired = f", {held.expired} expirée(s)" if held.expired else ""
    lines.append(
        f"SHORT_TERM.md   {st_fill}{_warning(st_fill, warn_at)} — {len(held.working)} note(s)"
        f"{expired}"
    )
    if held.apart or held.expired_apart:
        q_fill = Fill(len(shortterm.render(held.apart)), limits.quarantine_chars)
        expired = f", {held.expired_apart} expirée(s)" if held.expired_apart else ""
        lines.append(
            f"QUARANTINE.md   {q_fill}{_warning(q_fill, warn_at)} — {len(held.apart)} note(s) "
            f"en quarantaine, jamais chargées{expired} (`ocmem note --liste`)"
        )
    # a journal of 100 000 entries is not read when the search index describes it as it is
    # (what hides an entry was then remembered by the read that indexed it)
    from ocmem.home.journalindex import count_entries, recorded_count

    data, suspect = b"", False
    entries = recorded_count(paths.journal_index, paths.journal)
    if entries is None:
        data = read_bytes(paths.journal) or b""
        entries, suspect = count_entries(data)
    archives = len(ws.journal_files()) - 1
    archived = f" (+{archives} archive(s))" if archives else ""
    lines.append(f"journal.md      {entries} entrée(s){archived}")
    lines += [f"  {line}" for line in _journal_damage(ws, data, suspect)]
    document = ws.pending_document()
    proposals = document.proposals
    count = {s: sum(p.state == s for p in proposals) for s in pending.STATES}
    absent = presence.shown_statuses(ws, proposals)
    gone = f" (dont {len(absent)} absente(s) de la mémoire validée)" if absent else ""
    lines.append(
        f"pending.md      {count[pending.STATE_PENDING]} en attente, "
        f"{count[pending.STATE_PROMOTED]} promue(s){gone}, {count[pending.STATE_REFUSED]} "
        f"refusée(s), {count[pending.STATE_MERGED]} fusionnée(s)"
    )
    lines += [f"  ⚠ {pid} : {status}" for pid, status in sorted(absent.items())]
    lines += [f"  {line}" for line in pending.damage_lines(document)]
    installed = ws.skills()
    lines.append(f"skills/         {len(installed)}/{limits.skills_max} skill(s)")
    for skill in installed:
        lines += [
            f"  ⚠ {skill.name} : {problem} → corrige {ws.paths.rel(skill.path)} (`ocmem doctor`)"
            for problem in skill.problems
        ]
    return Outcome(lines + _sync_status(ws))


def _journal_damage(ws: Workspace, data: bytes, met: bool) -> list[str]:
    """What hides journal entries: found here when this read shows some, else as remembered
    (ocmem.home.journaldamage: no second pass over the journal)."""
    if not met and not os.path.lexists(ws.paths.journal_damage):
        return []
    from ocmem.home import journaldamage

    path = ws.paths.journal
    if met:
        found = journal.damage(data)
        journaldamage.remember(ws.paths, path, found)
    else:
        found = journaldamage.remembered(ws.paths, path)
    return journaldamage.lines(ws.paths, path, found)


def _sync_status(ws: Workspace) -> list[str]:
    if not ws.sync_mode:
        return ["SilverBullet    non configuré (mémoire locale seulement)"]
    from ocmem.home import identity
    from ocmem.home.space import load_sync_config
    from ocmem.silverbullet.state import SyncState

    config = load_sync_config(ws.settings)
    state = SyncState.load(ws.paths, config.url)
    lines = [f"SilverBullet    {config.url} — {len(state.pulled)} fichier(s) tiré(s)"]
    home = identity.read(ws.paths)
    if home is not None:
        pages = ", ".join(rule.page(home.id, shared=home.shared_pages) for rule in config.push)
        lines.append(f"  pages de ce dossier : {pages}")
    for page, pushed in sorted(state.pushed.items()):
        open_conflicts = (
            f", ⚠ {len(pushed.conflicts)} bloc(s) dans une copie de conflit"
            if pushed.conflicts
            else ""
        )
        lines.append(f"  {page} : {len(pushed.blocks)} bloc(s) poussé(s){open_conflicts}")
    return lines
