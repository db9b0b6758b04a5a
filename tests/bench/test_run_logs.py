"""A run's client logs go to its log file; a Kafka outage is two console lines (bench.logs)."""

from __future__ import annotations

import logging
import socket

from bench.logs import KAFKA_LOGGER, RunLogs


def test_client_noise_goes_to_the_file_and_an_outage_is_two_lines(tmp_path, capsys):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    port = server.getsockname()[1]
    console: list[str] = []
    with RunLogs(tmp_path / "logs", f"127.0.0.1:{port}", console.append) as logs:
        outage = logs.outage
        for _ in range(200):  # librdkafka repeats this every few hundred ms while the broker is down
            KAFKA_LOGGER.error("FAIL [thrd:127.0.0.1:%d/1]: Connect to ipv4#127.0.0.1:%d failed: Connection refused",
                               port, port)
        logging.getLogger("influxdb_client.client.write_api").error("HTTP response body: {\"error\":\"...\"}")
        outage.probe_every_s = 0
        outage.check()  # nothing listens yet
        server.listen()
        outage.check()
    server.close()
    assert console[0] == f"Kafka at 127.0.0.1:{port} unreachable, retrying ..."
    assert console[1].startswith(f"Kafka at 127.0.0.1:{port} reachable again after ") and len(console) == 2
    text = (tmp_path / "logs" / "driver.log").read_text()
    assert text.count("Connection refused") == 200 and "HTTP response body" in text
    captured = capsys.readouterr()
    assert "Connection refused" not in captured.out + captured.err
    assert outage not in KAFKA_LOGGER.handlers  # removed after the run


def test_recording_the_input_keeps_the_producers_client_lines_off_the_console(tmp_path, monkeypatch, capsys):
    """run-all's recorded topic and the warm-up's are replayed before any run opens its logs: the
    producer's librdkafka lines (a just-started broker: "Coordinator load in progress") go to the
    first reading run's driver.log all the same."""
    from types import SimpleNamespace

    from bench.run.input import record_input

    def replay(dataset, topic, *args, **kwargs):
        logging.getLogger("producers").warning("GETPID [bench-producer#producer-7] [thrd:main]: Failed to acquire "
                                               "idempotence PID from broker: Coordinator load in progress: retrying")
        return SimpleNamespace(ok=True, interrupted=False, errors=[])

    monkeypatch.setattr("bench.run.input.replay", replay)  # record_input's producer
    run = SimpleNamespace(topic_exists=False, dataset=SimpleNamespace(name="NYC_FLIGHTS"),
                          options=SimpleNamespace(limit=10, partitions=1, progress=False, producers=1),
                          config=SimpleNamespace(topic="t", results_dir=tmp_path / "run", bootstrap_servers=None))
    record_input([run], log=lambda *_: None)
    assert run.topic_exists
    assert "GETPID" not in "".join(capsys.readouterr())
    assert "Coordinator load in progress" in (tmp_path / "run" / "logs" / "driver.log").read_text()
