"""Helpers of tests/e2e/test_aggregator.py: fixtures, exact quantities, a fake agent."""
