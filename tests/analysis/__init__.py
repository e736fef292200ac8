"""Tests of tb_plugin.analysis (pure functions over hand-built Profiles)."""
