//! Placeholder: the pure store (being written).
