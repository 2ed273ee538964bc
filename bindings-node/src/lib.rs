//! mqstate-node: filled in by the foundation issue.
