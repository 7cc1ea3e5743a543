"""OraRL stage D: which of equally-scored rows is kept (issue 31, item 7d).

Published: HVision-NKU/OraRL `verl/trainer/orarl_selection.py` `_rank_by_magnitude` sorts a
sign bucket by `(-|A|, row)`, `row` being the row's position in the batch it is given. That
batch was reordered before the reward by `_balance_batch` (`verl/trainer/ray_trainer.py`,
"Reorder the data ... such that each dp rank gets similar total tokens"): EasyR1's
`get_seqlen_balanced_partitions` (`verl/utils/seqlen_balancing.py` lines 100-130 and 153-185,
Karmarkar-Karp over the rows' token counts into `world_size` equal-size partitions, each
sorted, concatenated in the algorithm's partition order). So among rows of equal |A| OraRL
keeps the one that lands first after length balancing; ours keeps the lowest rollout index.
The rule is the same: given the rows in OraRL's order, ours picks OraRL's rows.
"""

import torch
from tests.algorithms.tensors import flags, ids, t

from videorl.algorithms.selection import PruningConfig, select_rows

# one group: 8 policy rows with 0/1 rewards (three correct: 1, 4, 6), then the annotation
# row; equal rewards give equal advantages, so both buckets are all ties
SCORES = [-0.375, 0.625, -0.375, -0.375, 0.625, -0.375, 0.625, -0.375, 1.0]
ANNOTATION = [False] * 8 + [True]


def kept(order: list[int]) -> set[int]:
    """Rows (by rollout index) that `select_rows` keeps when given the group in `order`."""
    result = select_rows(
        t([SCORES[i] for i in order]),
        ids([0] * len(order)),
        flags([ANNOTATION[i] for i in order]),
        PruningConfig(enabled=True, prune_ratio=0.5, pos_quota=1, neg_quota=2),
        n=8,
    )
    return {order[p] for p in torch.nonzero(result.kept).flatten().tolist()}


def test_ours_breaks_ties_by_rollout_index():
    # the annotation, the first positive (1), the first two negatives (0, 2)
    assert kept(list(range(9))) == {8, 1, 0, 2}


def test_given_a_length_balanced_order_the_rule_picks_orarls_rows():
    # a balanced order `_balance_batch` can produce: partitions [3, 6, 8], [0, 5, 7],
    # [1, 2, 4] (each sorted, concatenated unsorted). `_rank_by_magnitude` then ranks the
    # positives 6, 1, 4 and the negatives 3, 0, 5, ...: OraRL keeps 8, 6, 3, 0.
    balanced = [3, 6, 8, 0, 5, 7, 1, 2, 4]
    assert kept(balanced) == {8, 6, 3, 0}
    assert kept(balanced) != kept(list(range(9)))
