"""videorl: reinforcement-learning post-training of video multimodal LLMs."""

__version__ = "0.1.0"
