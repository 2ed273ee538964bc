//! Placeholder: the persistence log (being written).
