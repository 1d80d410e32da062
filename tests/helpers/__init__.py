"""Helpers shared by the tests (no tests here): scenario documents and the CLI, small machines, vehicles and synthetic files of each format."""
