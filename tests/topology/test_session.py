"""The shared SparkSession writes checkpoints the way `bench.topology.session` says."""

from __future__ import annotations

import pytest

from bench.topology.session import FILE_SYSTEM_CHECKPOINT_MANAGER

pytestmark = pytest.mark.spark


def test_checkpoints_are_written_through_the_file_system_api(spark, tmp_path):
    # Spark reads the class from the Hadoop configuration of the session: a name it cannot load
    # would fail the first checkpoint write, one it does not see would leave FileContext in place.
    jvm = spark._jvm
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.create(
        jvm.org.apache.hadoop.fs.Path(str(tmp_path)), spark._jsparkSession.sessionState().newHadoopConf())
    assert manager.getClass().getName() == FILE_SYSTEM_CHECKPOINT_MANAGER
