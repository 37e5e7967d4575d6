"""Whole models for suites/test_models.py, written the way training repositories write them."""
