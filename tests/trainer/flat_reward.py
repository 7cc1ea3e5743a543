"""A reward plug-in for trainer tests: half the records (by a hash of their id) give every
response the same reward, so their groups have zero variance and dynamic sampling drops
them; the others score longer responses higher."""

import zlib


def reward(record, response, config):
    if zlib.crc32(record.id.encode()) % 2:
        return {"format": 1.0, "task": 0.5, "overall": 0.5}
    score = min(1.0, len(response) / 40.0)
    return {"format": 1.0, "task": score, "overall": score}
