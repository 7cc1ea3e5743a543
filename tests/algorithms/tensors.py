"""Small tensor builders shared by the algorithm tests (float64 for exact comparisons)."""

import torch

F64 = torch.float64


def t(values, dtype=F64):
    return torch.tensor(values, dtype=dtype)


def ids(values):
    return torch.tensor(values, dtype=torch.long)


def flags(values):
    return torch.tensor(values, dtype=torch.bool)


def close(actual, expected, atol=1e-6):
    torch.testing.assert_close(actual, t(expected), atol=atol, rtol=0)
