"""Open an HTML report in headless Chromium and tell whether its figures rendered.

Chromium loads the file with no network and a throw-away profile, runs the report's own render
check on window "load" (every `<img class="figure">` decoded, i.e. naturalWidth > 0) and prints
the resulting DOM (`--dump-dom`); this module reads the `#render-status` marker back. A report
whose script did not run, or with one figure that failed to decode, does not pass.

Chromium is Debian's `chromium` package (`scripts/install-debian-packages.sh` installs it when missing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
    "--disable-extensions", "--mute-audio",
)
_STATUS = re.compile(r'<p\b[^>]*\bid="render-status"[^>]*>', re.S)
_ATTR = re.compile(r'\b(data-figures|data-rendered)="(\d*)"')
_EXPECTED = re.compile(r'<meta name="bench-figures" content="(\d+)"')


def find_chromium() -> str | None:
    """Path of a Chromium binary (`BENCH_CHROMIUM`, chromium, chromium-browser), or None."""
    for name in (os.environ.get("BENCH_CHROMIUM"), "chromium", "chromium-browser"):
        if name and (path := shutil.which(name)):
            return path
    return None


def dump_dom(html_file: Path, chromium: str | None = None, timeout_s: float = 120.0) -> str:
    """The DOM of `html_file` after load, as serialised by headless Chromium.

    Raises: FileNotFoundError: no Chromium (run scripts/install-debian-packages.sh);
        RuntimeError: Chromium failed or timed out (its stderr tail in the message).
    """
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium not found: run scripts/install-debian-packages.sh (Debian package chromium)")
    with tempfile.TemporaryDirectory(prefix="bench-chromium-") as profile:
        cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom",
               Path(html_file).resolve().as_uri()]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"chromium did not finish within {timeout_s:.0f} s") from None
    if out.returncode != 0 or not out.stdout.strip():
        tail = "\n".join(out.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"chromium exited {out.returncode} with no DOM: {tail}")
    return out.stdout


@dataclass(frozen=True)
class RenderResult:
    expected: int | None   # figures the report says it embeds (meta bench-figures)
    figures: int | None    # <img class="figure"> elements the browser found
    rendered: int | None   # of them, decoded (naturalWidth > 0)

    @property
    def ok(self) -> bool:
        return (self.figures is not None and self.figures > 0 and self.rendered == self.figures
                and (self.expected is None or self.expected == self.figures))

    def describe(self) -> str:
        if self.figures is None:
            return "the report's render check did not run (no data-figures in the DOM)"
        return f"{self.rendered} of {self.figures} figures rendered (report declares {self.expected})"


def parse_dom(dom: str) -> RenderResult:
    """Read the render marker from a dumped DOM."""
    expected = _EXPECTED.search(dom)
    tag = _STATUS.search(dom)
    attrs = dict(_ATTR.findall(tag.group(0))) if tag else {}
    figures = attrs.get("data-figures") or None
    rendered = attrs.get("data-rendered") or None
    return RenderResult(int(expected.group(1)) if expected else None,
                        int(figures) if figures is not None else None,
                        int(rendered) if rendered is not None else None)


def check_report_rendered(html_file: Path, chromium: str | None = None) -> RenderResult:
    """Open the report in headless Chromium; `.ok` is True only when every figure rendered."""
    return parse_dom(dump_dom(html_file, chromium))
