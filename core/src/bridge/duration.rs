//! Durations as other languages hand them over: seconds as a float (Python), milliseconds
//! as a number (Node). One conversion with one set of messages for every binding; the
//! floors of each purpose (an expiry or a lease of at least 1 ms) are the core's own
//! checks where the duration is used.

use std::time::Duration;

use crate::error::Error;

fn convert(name: &str, value: f64, unit: &str, per_second: f64) -> Result<Duration, Error> {
    if !value.is_finite() || value < 0.0 {
        return Err(Error::invalid_argument(format!(
            "{name} must be a finite, non-negative number of {unit} (got {value})"
        )));
    }
    Duration::try_from_secs_f64(value / per_second)
        .map_err(|_| Error::invalid_argument(format!("{name} is too large ({value} {unit})")))
}

/// `secs` seconds as a duration; NaN, infinite, negative or too large is `invalid_argument`
/// naming `name`.
pub fn secs_to_duration(name: &str, secs: f64) -> Result<Duration, Error> {
    convert(name, secs, "seconds", 1.0)
}

/// `ms` milliseconds as a duration (fractions kept); NaN, infinite, negative or too large is
/// `invalid_argument` naming `name`.
pub fn millis_to_duration(name: &str, ms: f64) -> Result<Duration, Error> {
    convert(name, ms, "milliseconds", 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn converts_and_refuses_with_the_name() {
        assert_eq!(
            secs_to_duration("expiry", 1.5).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            millis_to_duration("expiryMs", 2.5).unwrap(),
            Duration::from_micros(2500)
        );
        assert_eq!(secs_to_duration("timeout", 0.0).unwrap(), Duration::ZERO);
        for bad in [f64::NAN, f64::INFINITY, -1.0, 1e300] {
            let e = secs_to_duration("lease", bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            assert!(e.to_string().contains("lease"), "{e}");
        }
        let e = millis_to_duration("leaseMs", -5.0).unwrap_err();
        assert!(e.to_string().contains("milliseconds"), "{e}");
    }
}
