"""Helpers of tests/e2e/test_budget.py: nodes, the budget's expected Kueue objects, the harness."""
