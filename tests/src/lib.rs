//! Integration test harness shared by mqstate suites.
