//! The local state store service (emulator). Filled in by the server issue.
