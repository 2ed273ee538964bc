//! The family of a status — the parent class the other languages give its code — from the
//! core's error table: one test for every connect failure, every store refusal, every clock
//! limit.

/// The family of a status, from the core's error table (the parent class other languages
/// give the code): connect failures worth one `if`, store refusals, clock limits.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mqstate_status_family {
    /// In no family: success, and every status the other rows do not name.
    None = 0,
    /// `StoreError`: the state store refused the request (100–112).
    Store = 1,
    /// `ClockError`: a clock limit (3, 4).
    Clock = 2,
    /// `ConnectError`: connecting failed (8, 14–17).
    Connect = 3,
}

impl mqstate_status_family {
    /// The family named `parent` in the core's table (one of `ERROR_FAMILIES`).
    fn of_parent(parent: &str) -> mqstate_status_family {
        use mqstate_status_family as F;
        match mqstate::ERROR_FAMILIES.iter().position(|f| *f == parent) {
            Some(0) => F::Store,
            Some(1) => F::Clock,
            Some(2) => F::Connect,
            _ => F::None,
        }
    }
}

/// The family of `status` (`MQSTATE_STATUS_FAMILY_NONE` for success, for statuses in no
/// family and for numbers that are no status): e.g. every connect failure —
/// `CONNECT_FAILED`, `CONNECT_REFUSED`, `CONNECT_TIMEOUT`, `CONNECT_UNAUTHORIZED`, `TLS` —
/// is `MQSTATE_STATUS_FAMILY_CONNECT`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_status_family_of(status: u32) -> mqstate_status_family {
    mqstate::ERROR_TABLE
        .iter()
        .find(|row| row.number == status)
        .map_or(mqstate_status_family::None, |row| {
            mqstate_status_family::of_parent(row.parent)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::ALL_STATUSES;

    #[test]
    fn families_follow_the_core_table() {
        use mqstate_status_family as F;
        assert_eq!(
            mqstate::ERROR_FAMILIES,
            ["StoreError", "ClockError", "ConnectError"]
        );
        for status in ALL_STATUSES {
            let n = status as u32;
            let want = match mqstate::ERROR_TABLE.iter().find(|r| r.number == n) {
                Some(row) if row.parent == "StoreError" => F::Store,
                Some(row) if row.parent == "ClockError" => F::Clock,
                Some(row) if row.parent == "ConnectError" => F::Connect,
                _ => F::None,
            };
            assert_eq!(mqstate_status_family_of(n), want, "{}", status.name());
        }
        let connect: Vec<u32> = ALL_STATUSES
            .iter()
            .map(|s| *s as u32)
            .filter(|n| mqstate_status_family_of(*n) == F::Connect)
            .collect();
        assert_eq!(connect, [8, 14, 15, 16, 17]);
        assert_eq!(mqstate_status_family_of(9999), F::None);
    }
}
