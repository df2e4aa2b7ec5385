"""Fuzz targets for every mudrika parser that reads attacker input (see fuzz/README.md).

``fuzz.targets`` holds the one table of parsers; the atheris harnesses in this folder and the
Hypothesis test ``tests/security/test_fuzz_parsers.py`` both drive it.  Importing it needs neither
pytest nor atheris.
"""
