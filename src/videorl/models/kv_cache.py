"""The KV cache's name in transformers' model API, which changed under videorl's supported
range: transformers 5.24 renamed `past_key_values` to `cache` (the argument of `forward`,
`generate` and `compute_3d_position_ids`, and the field of model outputs); earlier 5.x
releases know only `past_key_values`. The shared-prompt forward and the shared prefill of
generation pass a cache, so they ask here which name the installed transformers uses.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from videorl.versions import installed_in_range

RENAMED_IN = ">=5.24.0.dev0"  # transformers


@cache
def cache_argument() -> str:
    """`cache` (transformers >= 5.24) or `past_key_values`."""
    return "cache" if installed_in_range("transformers", RENAMED_IN) else "past_key_values"


def output_cache(output: Any) -> Any:
    """The KV cache a forward with `use_cache=True` returned."""
    return getattr(output, cache_argument())
