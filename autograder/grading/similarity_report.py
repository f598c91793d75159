"""The similarity report: ``WORKSPACE/similarity-ASSIGNMENT.html``, the pairs of
:func:`autograder.grading.similarity.compare` ranked, the most similar side by side with
their matching regions marked. Readable offline: nothing is loaded from anywhere."""

from __future__ import annotations

from html import escape
from pathlib import Path

from autograder.grading.html import bars, page, table


def marked(code: str, slices) -> str:
    """``code`` as escaped HTML with the character ranges ``slices`` (copydetect's
    (starts, ends) arrays) in ``<mark>``."""
    out, at = [], 0
    for start, end in sorted(zip(slices[0].tolist(), slices[1].tolist())):
        start, end = max(int(start), at), int(end)
        if end <= start:
            continue
        out.append(escape(code[at:start]) + "<mark>" + escape(code[start:end]) + "</mark>")
        at = end
    return "".join(out) + escape(code[at:])


def side_by_side(pair, number: int) -> str:
    """One pair's section: per language, both codes in two columns, matches marked."""
    parts = [f'<h3 id="pair-{number}">{number}. {escape(pair.a.student_id)} &amp; '
             f'{escape(pair.b.student_id)}: {pair.similarity:.0%} similar</h3>',
             f'<p class="note">{pair.share_a:.0%} of {escape(pair.a.student_id)}\'s code '
             f'and {pair.share_b:.0%} of {escape(pair.b.student_id)}\'s match the other\'s '
             f'(marked).</p>']
    for lang, (slices_a, slices_b) in pair.regions.items():
        parts.append(f"<h4>{lang.capitalize()}</h4><div class=\"side\">"
                     f"<div><b>{escape(pair.a.student_id)}</b>"
                     f"<pre>{marked(pair.a.code[lang], slices_a)}</pre></div>"
                     f"<div><b>{escape(pair.b.student_id)}</b>"
                     f"<pre>{marked(pair.b.code[lang], slices_b)}</pre></div></div>")
    return "\n".join(parts)


def histogram(pairs) -> str:
    """The pairs' similarities in ten bins of 10 %."""
    counts = [0] * 10
    for p in pairs:
        counts[min(int(p.similarity * 10), 9)] += 1
    labels = [f"{10 * i}%" for i in range(10)]
    return bars(counts, labels, title="pairs by similarity (bins of 10 %)")


def write(path: Path, assignment: str, sources, pairs, *, unread: list[str], top: int,
          common: float, noise: int, cap: int, cut: list[str]) -> None:
    """Write the report of ``pairs`` (ranked) to ``path``: the ranked table of every pair
    with any match and the first ``top`` of them side by side. The detector's settings are
    the comparison's (:mod:`~autograder.grading.similarity`): ``noise``, the shortest match
    in characters, and ``cap``, the characters of one learner's code compared at most;
    ``cut``, one line per learner whose code was cut there."""
    shown = [p for p in pairs if p.similarity > 0]
    rows = [[f'<a href="#pair-{i}">{i}</a>' if i <= top else str(i),
             escape(p.a.student_id), escape(p.b.student_id), f"{p.similarity:.0%}",
             f"{p.share_a:.0%}", f"{p.share_b:.0%}", str(p.shared_tokens)]
            for i, p in enumerate(shown, 1)]
    body = [
        f"<p>{len(sources)} submission(s), {len(pairs)} pair(s) compared; {len(shown)} share "
        "any code. This report is for a person to read: it changes no grade, and a high "
        "score is a reason to look at the code, not a finding.</p>",
        f'<p class="note">Detector: copydetect (winnowing over Pygments tokens, names as one '
        f"letter, comments and whitespace ignored), matches of at least {noise} characters "
        "of that token text. Not compared: the released notebook's code (starter code, "
        f"given and test cells), code found alike in more than {common:.0%} of the "
        "submissions (common idioms), knowledge-check answers, and a learner's code beyond "
        f"its first {cap:,} characters. Similarity: the larger of the two shares, the share "
        "of one learner's compared tokens found in the other's (so a copy padded with code "
        "of its own still scores high); both shares are shown.</p>",
        "<h2>Distribution</h2>", histogram(pairs),
        "<h2>Pairs, most similar first</h2>",
        table(["rank", "learner", "learner", "similarity", "share of first",
               "share of second", "matching tokens"], rows, numeric={0, 3, 4, 5, 6})
        if rows else "<p>No two submissions share any compared code.</p>",
    ]
    if unread:
        body.append("<h2>Not compared</h2><ul>" + "".join(
            f"<li>{escape(u)}</li>" for u in unread) + "</ul>")
    if cut:
        body.append("<h2>Not compared in full</h2><ul>" + "".join(
            f"<li>{escape(c)}</li>" for c in cut) + "</ul>")
    if shown[:top]:
        body.append("<h2>Side by side</h2>")
        body += [side_by_side(p, i) for i, p in enumerate(shown[:top], 1)]
    path.write_text(page(f"Similar submissions: {assignment}", "\n".join(body)),
                    encoding="utf-8")
