"""The KRaft cluster id handed to ``kafka-storage format``."""

from __future__ import annotations

import re
import uuid

from bench.stack import kafka


def test_an_id_starting_with_a_dash_is_drawn_again(monkeypatch):
    # 0xF8 encodes to "-" as the first base64url character: the format's parser read
    # "-t -..." as a missing value (CI failure of 2026-11-25).
    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(kafka.uuid, "uuid4", lambda: next(draws))
    assert kafka.random_cluster_id() == "AQEBAQEBAQEBAQEBAQEBAQ"


def test_ids_are_22_url_safe_characters_and_differ():
    ids = {kafka.random_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", i) for i in ids)
