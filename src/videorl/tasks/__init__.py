"""The task families, one module each; every module registers its `TaskFamily`
(`data/families.py`) when the registry first needs it (docs/tasks.md)."""
