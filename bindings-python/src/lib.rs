//! mqstate-python: filled in by the foundation issue.
