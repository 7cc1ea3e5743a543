"""A reward plug-in for trainer tests: longer responses score higher, so a random tiny
model's rows differ in reward and every estimator yields nonzero advantages."""


def reward(record, response, config):
    score = min(1.0, len(response) / 40.0)
    return {"format": 1.0, "task": score, "overall": score}
