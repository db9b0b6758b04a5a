"""The Java groupings (`groupings/jvm`, the port the Storm peer and the JVM grouping stage route with)
against the same golden vectors as the Python groupings (dkg-reference.md for the reference four,
the authors' code for D_CHOICES and W_CHOICES, rescaling.md for KEY_GROUP and VNODE), also when restored from a save between batches: their JUnit
tests, run by Maven (the `maven` fixture skips them, and says so, only when Java or Maven is not on PATH)."""

from __future__ import annotations

from bench.stack.maven import GROUPINGS_JVM_DIR
from tests.junit import junit_suites


def test_java_groupings_pass_their_junit_tests_against_the_golden_vectors(maven):
    suites, ran, failed = junit_suites(maven, GROUPINGS_JVM_DIR)
    assert {"groupings.GoldenTest", "groupings.HashingTest", "groupings.OwnershipTest",
            "groupings.SerializationTest", "groupings.SlbOracleTest"} <= suites
    assert ran >= 80 and failed == 0
