"""The synthetic spatial intelligence generator (`videorl synth`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from videorl.data.families import SI_CHOICE_SUBTYPES, SI_NUMERIC_SUBTYPES
from videorl.data.records import LETTERS, ChoiceAnswer, NumericAnswer, TaskRecord
from videorl.data.synth import FAMILY_SYNTHS, SynthDraw
from videorl.data.synth_scene import Placed, place
from videorl.data.synth_tasks import appearing, frame_size, save_video, scatter, synth_record

SI_SUBTYPES = SI_NUMERIC_SUBTYPES + SI_CHOICE_SUBTYPES
TILE = 8


def shuffled_options(
    rng: np.random.Generator, correct: str, wrong: list[str]
) -> tuple[tuple[str, ...], ChoiceAnswer]:
    """Options `correct + wrong` in random order and the letter of the correct one."""
    options = [str(o) for o in rng.permutation([correct, *wrong])]
    return tuple(options), ChoiceAnswer(LETTERS[options.index(correct)])


def _si_numeric(
    rng: np.random.Generator, subtype: str, width: int, height: int
) -> tuple[str, float, list[Placed]]:
    """(question, value, shapes) of one numeric subtype; distances in pixels."""
    if subtype == "object_counting":
        count = int(rng.integers(1, 5))
        items: list[Placed] = []
        for _ in range(count):
            x, y = place(rng, 10, height, width, items)
            items.append(Placed("square", "yellow", x, y, 10))
        return "How many yellow squares are there?", float(count), items
    if subtype == "abs_distance":
        items = scatter(rng, width, height, 2)
        (ax, ay), (bx, by) = items[0].center, items[1].center
        distance = round(math.hypot(ax - bx, ay - by), 1)
        question = (
            f"What is the distance in pixels between the centres of the "
            f"{items[0].name} and the {items[1].name}?"
        )
        return question, distance, items
    if subtype == "object_size":
        items = scatter(rng, width, height, 2)
        return f"How many pixels wide is the {items[0].name}?", float(items[0].size), items
    # room_size: a checkerboard room of TILE x TILE tiles
    cols, rows = int(rng.integers(2, width // TILE - 1)), int(rng.integers(2, height // TILE - 1))
    x0 = TILE * int(rng.integers(0, width // TILE - cols + 1))
    y0 = TILE * int(rng.integers(0, height // TILE - rows + 1))
    tiles = [
        Placed("square", "white" if (r + c) % 2 else "cyan", x0 + TILE * c, y0 + TILE * r, TILE)
        for r in range(rows)
        for c in range(cols)
    ]
    question = f"The room is made of {TILE} x {TILE} pixel tiles. How many tiles cover its floor?"
    return question, float(rows * cols), tiles


def _si_choice(
    rng: np.random.Generator, subtype: str, width: int, height: int
) -> tuple[str, str, list[str], list[Placed]]:
    """(question, correct option, wrong options, shapes) of one choice subtype."""
    if subtype == "rel_distance":
        while True:
            items = scatter(rng, width, height, 4)
            ref, others = items[0], items[1:]
            dists = [math.dist(ref.center, o.center) for o in others]
            order = np.argsort(dists)
            if dists[order[1]] - dists[order[0]] >= 6:  # a clear winner
                break
        names = [o.name for o in others]
        question = f"Which object is closest to the {ref.name}?"
        return question, names[order[0]], [n for k, n in enumerate(names) if k != order[0]], items
    if subtype in ("route_planning", "rel_direction"):
        while True:
            ref, goal = scatter(rng, width, height, 2)
            dx, dy = goal.center[0] - ref.center[0], goal.center[1] - ref.center[1]
            if subtype == "route_planning" and min(abs(dx), abs(dy)) >= 8:
                break
            if subtype == "rel_direction" and max(abs(dx), abs(dy)) >= 2 * min(abs(dx), abs(dy)):
                break
        if subtype == "route_planning":
            routes = [f"{h} then {v}" for h in ("left", "right") for v in ("up", "down")]
            correct = f"{'right' if dx > 0 else 'left'} then {'down' if dy > 0 else 'up'}"
            question = f"The {ref.name} must reach the {goal.name}. Which route gets it there?"
            return question, correct, [r for r in routes if r != correct], [ref, goal]
        sides = ["left", "right", "above", "below"]
        if abs(dx) >= abs(dy):
            correct = "right" if dx > 0 else "left"
        else:
            correct = "below" if dy > 0 else "above"
        question = f"Where is the {goal.name} relative to the {ref.name}?"
        return question, correct, [s for s in sides if s != correct], [ref, goal]
    # appearance_order: four shapes appear 1 s apart; ask which appears last
    items = scatter(rng, width, height, 4)
    names = [i.name for i in items]
    return "Which object appears last?", names[-1], names[:-1], items


def spatial_intelligence(rng: np.random.Generator, rid: str, out: Path, index: int) -> TaskRecord:
    """Subtype `SI_SUBTYPES[index % 8]`; static scenes except appearance order."""
    subtype = SI_SUBTYPES[index % len(SI_SUBTYPES)]
    width, height = frame_size(rng)
    fields: dict = {"subtype": subtype, "width": width, "height": height}
    answer: NumericAnswer | ChoiceAnswer
    if subtype in SI_NUMERIC_SUBTYPES:
        problem, value, items = _si_numeric(rng, subtype, width, height)
        answer = NumericAnswer(value)
    else:
        problem, correct, wrong, items = _si_choice(rng, subtype, width, height)
        fields["options"], answer = shuffled_options(rng, correct, wrong)
    if subtype == "appearance_order":
        duration, at = 5.0, appearing(items)
    else:
        duration, at = 2.0, appearing(items, first=0.0, gap=0.0)
    media = save_video(out, rid, width, height, duration, at)
    return synth_record(
        "spatial_intelligence", rid, problem, answer, None, media, duration, **fields
    )


def synthesize(draw: SynthDraw) -> TaskRecord:
    return spatial_intelligence(draw.rng, draw.rid, draw.out, draw.index)


FAMILY_SYNTHS.register("spatial_intelligence", synthesize)
