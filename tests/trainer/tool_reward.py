"""A reward plug-in for the multi-turn trainer tests: it reads the row's tool calls
(`calls`, rewards/calls.py) and scores 1 for a row that made a call that ran, else 0."""


def reward(record, response, config, calls):
    score = 1.0 if any(call.ok and call.name == "get_clip" for call in calls) else 0.0
    return {"format": 1.0, "task": score, "overall": score, "calls": float(len(calls))}
