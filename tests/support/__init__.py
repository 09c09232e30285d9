"""Shared test harnesses: the daemon, throwaway servers, strategies, named team documents.

Test modules import from here and never from one another (tests/test_layout.py checks it).
"""
