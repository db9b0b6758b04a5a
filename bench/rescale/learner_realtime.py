"""LEARNER in real-time mode: the warm-up of bench/rescale/learner.py, then the switch of
SHARED_STATE in real-time mode (bench/rescale/shared_state_realtime.py) with only the lag to install
(docs/rescaling.md, "LEARNER in real-time mode").

What differs from the micro-batch protocol: the warm-up epoch's records reach the new owners
through `<run>.state`, as every transfer of a real-time query does, and are kept in the rescale
channel too, as the warm-up snapshot the lag is computed from (the routers read no epoch without a
barrier: `ChannelBarrier.java`). The warm-up has caught up once a committed real-time batch has read
every record of `<run>.state` written so far.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from bench.rescale.learner import Learner
from bench.rescale.shared_state_realtime import RealtimeSharedState
from bench.topology import state_transfer
from bench.topology.checkpoint_log import batch_ids, has_read


@dataclass
class RealtimeLearner(Learner, RealtimeSharedState):
    """LEARNER's events on a real-time run: `Learner.advance`'s warm-up, then
    `RealtimeSharedState.advance`'s steps."""

    def _deliver_warm_up(self, epoch: int, records: list[tuple[str, str]]) -> None:
        """The warm-up epoch into the channel (the snapshot) and to `<run>.state` (once: a resumed
        driver finds the epoch written).

        Raises RuntimeError: a record was not acknowledged by Kafka."""
        c = self.config
        self.channel.publish(epoch, records)
        if epoch not in state_transfer.written_epochs(c.bootstrap_servers, c.run_id):
            state_transfer.write(c.bootstrap_servers, c.run_id, self.channel_records(epoch), epoch)

    def channel_records(self, epoch: int) -> list[tuple[str, str]]:
        """A published epoch's transfer records as (key, value) pairs of `<run>.state`, as the first
        attempt published them: a resumed driver's state read may be of a later batch, and the lag
        is computed from the published snapshot."""
        out = []
        for record in self.channel.records(epoch):
            kind = state_transfer.INSTALL if state_transfer.INSTALL in record else state_transfer.EXTRACT
            out.append((f"{record['epoch']}|{record['slot']}|{kind}|{record['chunk']}",
                        json.dumps(record, separators=(",", ":"))))
        return out

    def _warmed_batch(self, index: int, entry: dict) -> int | None:
        """The last committed real-time batch, once one has read every record of `<run>.state` (the
        warm-up's included)."""
        topic = state_transfer.topic(self.config.run_id)
        if not has_read(self.checkpoint, topic, self._ends(topic, index)):
            return None
        return batch_ids(self.checkpoint / "commits")[-1]
