"""`ServeLimits` refuses a bound that is not positive, in one line naming the field."""

from __future__ import annotations

import dataclasses

import pytest

from videorl.errors import ConfigError
from videorl.serve.limits import ServeLimits


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(ServeLimits)])
def test_every_limit_must_be_positive(name):
    with pytest.raises(ConfigError, match=rf"^serve limit {name}=0 is invalid: it must be > 0$"):
        ServeLimits(**{name: 0})
