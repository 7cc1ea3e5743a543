"""videorl.rollout"""
