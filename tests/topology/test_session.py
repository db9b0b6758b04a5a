"""The shared SparkSession writes checkpoints the way `bench.topology.session` says."""

from __future__ import annotations

import os

import pytest
from py4j.protocol import Py4JJavaError

from bench.topology.session import FILE_SYSTEM_CHECKPOINT_MANAGER, LOCAL_FILE_SYSTEM

pytestmark = pytest.mark.spark


def test_checkpoints_are_written_through_the_file_system_api(spark, tmp_path):
    # Spark reads the class from the Hadoop configuration of the session: a name it cannot load
    # would fail the first checkpoint write, one it does not see would leave FileContext in place.
    jvm = spark._jvm
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.create(
        jvm.org.apache.hadoop.fs.Path(str(tmp_path)), spark._jsparkSession.sessionState().newHadoopConf())
    assert manager.getClass().getName() == FILE_SYSTEM_CHECKPOINT_MANAGER


def test_local_files_get_their_permissions_without_a_chmod_process(spark, tmp_path):
    # The session's `file:` file system is the JVM stage's (loaded before `spark.jars` are); a file
    # it creates gets Hadoop's default permission under the umask, as with Hadoop's own, and
    # setPermission sets exactly the bits asked for.
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    path = jvm.org.apache.hadoop.fs.Path(str(tmp_path / "offsets" / "0"))
    fs = path.getFileSystem(conf)
    assert fs.getClass().getName() == LOCAL_FILE_SYSTEM
    stream = fs.create(path, False)
    stream.write(b"v1")
    stream.close()
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "offsets" / "0").read_bytes() == b"v1"
    assert os.stat(tmp_path / "offsets" / "0").st_mode & 0o777 == 0o666 & ~umask
    assert (tmp_path / "offsets" / ".0.crc").exists()  # still Hadoop's checksummed LocalFileSystem
    fs.setPermission(path, jvm.org.apache.hadoop.fs.permission.FsPermission(0o640))
    assert os.stat(tmp_path / "offsets" / "0").st_mode & 0o777 == 0o640
    with pytest.raises(Py4JJavaError, match="FileNotFoundException"):
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(tmp_path / "missing")),
                         jvm.org.apache.hadoop.fs.permission.FsPermission(0o640))
