"""The task families, one package each (docs/tasks.md): its `__init__` registers the
family's `TaskFamily` (`data/families.py`) when the registry first needs it, and its
`reward`, `evaluation`, `synth` and `demo` modules register the other parts on first use."""
