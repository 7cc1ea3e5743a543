"""videorl.algorithms: pure tensor functions for advantages, OraRL selection, distillation
gating, TaRO off-policy rows and the policy losses (docs/methods.md#advantage-estimators,
#policy-loss).

The package exports the two extension points, the advantage-estimator and policy-loss
registries; each method's functions are imported from its module
(`videorl.algorithms.orarl`, `.selection`, `.distill`, `.taro`, `.loss`, `.advantages`).
"""

from videorl.algorithms.advantages import (
    ADVANTAGES,
    AdvantageResult,
    Estimator,
    get_estimator,
    register_advantage,
)
from videorl.algorithms.policy_losses import (
    POLICY_LOSSES,
    PolicyTerms,
    get_policy_loss,
    register_policy_loss,
)

__all__ = [
    "ADVANTAGES",
    "POLICY_LOSSES",
    "AdvantageResult",
    "Estimator",
    "PolicyTerms",
    "get_estimator",
    "get_policy_loss",
    "register_advantage",
    "register_policy_loss",
]
