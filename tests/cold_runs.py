"""The session's `bench run` command lines with a cold Spark of their own, in a child process that
runs them one after the other at the end of the session's background work.

Two tests assert on a whole `python -m bench run` started afresh, as a user starts it:

- `plugin`: the toy plugin grouping of tests/plugins (found through PYTHONPATH by the driver and by
  Spark's Python workers, which inherit the environment the JVM started with), over the session's
  shared input topic (tests/plugins/test_plugin_spark.py);
- `local-cluster`: DYNAMIC_KEY over the same topic on `local-cluster[2,1,1024]`, Spark's executors
  in JVMs of their own (tests/topology/test_e2e.py).

Each is a cold Spark JVM and its Python workers, 36-67 s of the session's wall time in its
foreground (2026-12-02), almost all of it the child's. So one child process
(`python -m tests.cold_runs SPEC`) runs both once the session's other background runs have ended
(tests/conftest.py `cold_child`), and the tests that read them are ordered after every other test
but the short nemesis's. SPEC is a JSON file: `bootstrap`, `influx_url`, `influx_database`,
`results_dir`, `topic`, `e2e` (`E2E_FAST`), `dataset`, `plugin_site` (the toy plugin's
folder), `plugin_param`. The child writes `<results_dir>/index.json`, run name -> run folder, once
both have ended, and `error` there with the end of a failed command's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

from tests.child_runs import bench_run_argv

REPO_ROOT = Path(__file__).resolve().parents[1]


def runs(spec: dict, stamp: int) -> dict[str, tuple[list[str], dict]]:
    """name -> (command line, environment) of each run."""
    inherited = os.environ.get("PYTHONPATH")
    plugin_env = {**os.environ, "PYTHONPATH": os.pathsep.join([spec["plugin_site"], *([inherited] if inherited else [])])}
    return {
        "plugin": (bench_run_argv(spec, spec["e2e"], spec["results_dir"], grouping="round_robin_key",
                                  dataset=spec["dataset"], topic=spec["topic"], run_id=f"plugin-{stamp}",
                                  extra=("--param", spec["plugin_param"])), plugin_env),
        "local-cluster": (bench_run_argv(spec, spec["e2e"], spec["results_dir"], grouping="DYNAMIC_KEY",
                                         dataset=spec["dataset"], topic=spec["topic"], run_id=f"e2e-lc-{stamp}",
                                         master="local-cluster[2,1,1024]"), dict(os.environ)),
    }


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    results = Path(spec["results_dir"])
    index: dict = {}
    errors = []
    try:
        for name, (argv, env) in runs(spec, int(time.time())).items():
            proc = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
            if proc.returncode == 0:
                index[name] = str(results / argv[argv.index("--run-id") + 1])
            else:
                errors.append(f"{name}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    except Exception:  # reported to the tests through the index
        errors.append(traceback.format_exc())
    if errors:
        index["error"] = "\n".join(errors)
    (results / "index.json").write_text(json.dumps(index, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
