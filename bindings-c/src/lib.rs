//! mqstate-c: filled in by the foundation issue.
