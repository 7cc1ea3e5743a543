"""Dynamic micro-batching: group rows under a token budget, sorted by length.

Rows of similar length share a micro-batch so that little compute goes to padding; the
cost of a micro-batch is `rows x longest row` (its padded size), or `sum of row lengths`
when rows are packed without padding, kept <= the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

from videorl.distributed import all_reduce


def plan_microbatches(
    lengths: Sequence[int],
    token_budget: int,
    max_rows: int | None = None,
    *,
    packed: bool = False,
) -> list[list[int]]:
    """Partition row indices into micro-batches whose size fits `token_budget`.

    A single row longer than the budget gets a micro-batch of its own. Rows are taken in
    descending length, so each micro-batch's padded size is `len(batch) * its first length`;
    a packed micro-batch's size is the sum of its lengths.
    """
    if token_budget <= 0:
        raise ValueError(f"token_budget must be positive, got {token_budget}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = total = 0
    for index in order:
        length = max(1, int(lengths[index]))
        longest_if_added = max(longest, length)
        cost = total + length if packed else longest_if_added * (len(current) + 1)
        full = max_rows is not None and len(current) >= max_rows
        if current and (cost > token_budget or full):
            batches.append(current)
            current, longest_if_added, total = [], length, 0
        current.append(index)
        longest = longest_if_added
        total += length
    if current:
        batches.append(current)
    return batches


def plan_rank_microbatches(
    lengths: Sequence[int], token_budget: int, *, packed: bool = False
) -> list[list[int]]:
    """`plan_microbatches`, then empty micro-batches (`[]`, padding) up to the most any rank
    has: under FSDP every rank must run as many forwards and backwards."""
    micros = plan_microbatches(lengths, token_budget, packed=packed) if lengths else []
    return micros + [[]] * (int(all_reduce(float(len(micros)), "max")) - len(micros))
