"""The run's logs go to files, not the console (`bench.logs`)."""

from __future__ import annotations

import io
import logging

from bench.logs import KAFKA_LOGGER, JvmOutput, RunLogs, classify, describe


def test_classify_names_pyspark_worker_lines_and_log4j_levels():
    assert classify("Streaming TransformWithStateInPandas Python worker Starting execution of UDF: f.\n") \
        == "pyspark_worker"
    assert classify("25/11/26 07:00:00 WARN NativeCodeLoader: Unable to load native-hadoop\n") == "warning"
    assert classify("25/11/26 07:00:00 ERROR Executor: boom\n") == "error"
    assert classify("plain\n") == "other"


def test_jvm_output_holds_lines_until_a_target_then_writes_them_in_order(tmp_path):
    out = JvmOutput()
    out.attach(io.BytesIO(b"one\nStreaming TransformWithStateInPandas Python worker x\n"))
    out._thread.join(5)
    out.write("two\n")
    out.open(tmp_path / "logs" / "spark.log")
    out.write("three\n")
    out.close()
    out.write("held\n")
    assert (tmp_path / "logs" / "spark.log").read_text() == \
        "one\nStreaming TransformWithStateInPandas Python worker x\ntwo\nthree\n"
    assert out.snapshot() == {"other": 4, "pyspark_worker": 1}


def test_run_logs_keep_kafka_client_and_producer_records_off_the_console(tmp_path, capfd):
    with RunLogs(tmp_path / "logs") as logs:
        KAFKA_LOGGER.warning("FAIL|rdkafka#producer-1| [thrd:127.0.0.1:1/bootstrap]: Connection refused")
        logging.getLogger("producers").warning("a producer warning")
        summary = logs.summary()
    captured = capfd.readouterr()
    assert "rdkafka" not in captured.err + captured.out and "producer warning" not in captured.err + captured.out
    text = (tmp_path / "logs" / "driver.log").read_text()
    assert "Connection refused" in text and "a producer warning" in text
    assert summary["driver"] == {"kafka_client": 1, "warning": 1}
    assert "driver.log: 1 Kafka client, 1 warning" in describe(summary)
    # Restored on exit: the logger propagates again.
    assert logging.getLogger("producers").propagate
