"""A reward plug-in for the T-GRPO stage tests: a response is correct (task 1) when it says
"right", so a test sets each row's accuracy by its text."""


def reward(record, response, config):
    task = 1.0 if "right" in response else 0.0
    return {"format": 1.0, "task": task, "overall": task}
